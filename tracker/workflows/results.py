"""An upload or an import: the run is stored (:mod:`tracker.ingest.results`), then what follows.

A job's run finishes its job and moves its comparison round, bisection step or series; an
imported run of a plain commit feeds its series. Both inside the caller's transaction and
without git or GitHub: a bisection needing git waits as ``queued``, GitHub writes in the outbox.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from tracker.enums import RunSource
from tracker.ingest.results import IngestLimits, IngestOutcome, ingest_job_result, ingest_result
from tracker.models import Runner, utcnow
from tracker.settings import CulpritTelling
from tracker.workflows.reactions import after_import, after_job_run
from wire import JobResultIn, ResultIn


def store_job_result(
    *,
    session: Session,
    runner: Runner,
    job_id: int,
    result: JobResultIn,
    limits: IngestLimits,
    now: dt.datetime | None = None,
    telling: CulpritTelling | None = None,
) -> IngestOutcome:
    """Store one job attempt's run (a repeat is answered with the same run) and react to a new one;
    ``telling``: whether a culprit's pull request may be told (None: not)."""
    now = now or utcnow()
    outcome = ingest_job_result(
        session=session, runner=runner, job_id=job_id, result=result, limits=limits, now=now
    )
    if outcome.created and outcome.job is not None:
        after_job_run(
            session=session,
            job=outcome.job,
            run=outcome.run,
            now=now,
            defer=limits.defer_detection,
            rerun_budget=dt.timedelta(seconds=limits.rerun_budget_s),
            telling=telling,
        )
    return outcome


def store_result(
    *,
    session: Session,
    result: ResultIn,
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
    now: dt.datetime | None = None,
    telling: CulpritTelling | None = None,
) -> IngestOutcome:
    """Store an imported run once and, when new, feed its series."""
    now = now or utcnow()
    outcome = ingest_result(session=session, result=result, limits=limits, source=source, now=now)
    if outcome.created:
        after_import(session=session, run=outcome.run, now=now, defer=limits.defer_detection, telling=telling)
    return outcome
