"""Batches: many imports, or many of one runner's job attempts, stored in one transaction, then what follows.

Imports are stored set-based (:mod:`tracker.ingest.batch`) and evaluated later: each series a
stored run of a plain commit feeds is marked once for the scheduler's pending pass, so a batch
costs no series evaluation and its alerts appear after the next pass (within seconds), not in
the answer. A runner's results are stored one by one, each as ``POST /jobs/{id}/result`` stores it
(its job finished, its comparison, bisection or series moved on), after one lock of all their
jobs; an attempt whose lease is gone is refused alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy.orm import Session

from tracker.enums import RunSource
from tracker.errors import PerftrackError
from tracker.ingest.batch import BatchItem, BatchOutcome, ingest_results, lock_jobs, refused
from tracker.ingest.results import IngestLimits
from tracker.models import Runner, utcnow
from tracker.settings import CulpritTelling
from tracker.workflows.reactions import after_batch_import
from tracker.workflows.results import store_job_result
from wire import JobResultItemIn, ResultIn


def store_results(
    *,
    session: Session,
    results: Sequence[ResultIn | PerftrackError],
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
    now: dt.datetime | None = None,
) -> list[BatchItem]:
    """Store each imported result once and mark the series the new plain runs feed; the outcomes in order.

    An item given as a :class:`PerftrackError` (it failed validation) is reported refused.
    """
    items = ingest_results(session=session, results=results, limits=limits, source=source)
    after_batch_import(
        session=session,
        series=[item.series for item in items if item.series is not None and item.plain],
        now=now or utcnow(),
    )
    return items


def store_job_results(
    *,
    session: Session,
    runner: Runner,
    uploads: Sequence[JobResultItemIn | PerftrackError],
    limits: IngestLimits,
    now: dt.datetime | None = None,
    telling: CulpritTelling | None = None,
) -> list[BatchItem]:
    """Store each of ``runner``'s job attempts' results as a single upload would, and react to each new run.

    Each item has its own savepoint: a refusal (a lost lease, a commit that is not the job's)
    undoes only that item's work.
    """
    now = now or utcnow()
    lock_jobs(session=session, job_ids=[item.job_id for item in uploads if isinstance(item, JobResultItemIn)])
    items: list[BatchItem] = []
    for index, upload in enumerate(uploads):
        if isinstance(upload, PerftrackError):
            items.append(refused(index, upload))
            continue
        try:
            with session.begin_nested():
                outcome = store_job_result(
                    session=session,
                    runner=runner,
                    job_id=upload.job_id,
                    result=upload.result,
                    limits=limits,
                    now=now,
                    telling=telling,
                )
        except PerftrackError as error:
            items.append(refused(index, error))
            continue
        items.append(
            BatchItem(
                index=index,
                outcome=BatchOutcome.STORED if outcome.created else BatchOutcome.DUPLICATE,
                run_id=outcome.run.id,
                warnings=outcome.warnings,
            )
        )
    return items
