"""Evidence runs in the database: link one when it is stored, read it after, load the summaries.

An upload only links its evidence run to its :class:`~tracker.models.EvidenceJob`
(:func:`link_evidence_run`): gunzipping and parsing a trace of several MB is no work for the
request's write transaction. A linked row not read yet is pending (:func:`pending_evidence`); it
is read once, after the answer, in three steps that need no transaction held across the parsing:
:func:`evidence_input` loads the run's log and trace, :func:`read_evidence` summarises them (no
database), :func:`store_evidence_summary` keeps the summary (:func:`summarize_pending_evidence`
does all three in one session). A diagnosis never opens a trace: :func:`alert_evidence` and
:func:`result_evidence` load the summaries of both sides in one query, and a pending row adds
nothing until it is read.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from tracker.diagnosis.evidence import summarize
from tracker.enums import Arm, RunStatus
from tracker.models import EvidenceJob, Job, Run, RunArtifacts, RunFile

logger = logging.getLogger(__name__)
PENDING_LIMIT = 20  # rows read per pass; the next pass (or follow-up) takes the rest
# Readings a row may begin. One that never ends (its trace killed the reader: out of memory) is
# counted all the same, so such a trace is tried this many times, then given up, not forever.
MAX_READ_ATTEMPTS = 3

Sides = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (base side, head side) summaries


@dataclass(frozen=True)
class EvidenceInput:
    """What a pending row's run left to read: its log and trace (a failed run: nothing)."""

    job_id: int
    run_id: int
    ok: bool
    raw_log: str
    trace: bytes | None


def link_evidence_run(*, session: Session, job: Job, run: Run, now: dt.datetime) -> EvidenceJob | None:
    """Link the stored run ``run`` to the evidence row of ``job`` (``None``: not an evidence job).

    Nothing is read here: the row is pending until :func:`store_evidence_summary` keeps its summary.
    """
    link = session.get(EvidenceJob, job.id)
    if link is None:
        return None
    link.run_id = run.id
    link.recorded_at = now
    link.summarized_at = None
    session.flush()
    return link


def pending_evidence(*, session: Session, limit: int = PENDING_LIMIT) -> list[int]:
    """The job ids of the rows whose run is linked and not read yet, oldest first (one indexed query)."""
    return list(
        session.scalars(
            select(EvidenceJob.job_id)
            .where(EvidenceJob.summarized_at.is_(None), EvidenceJob.run_id.is_not(None))
            .order_by(EvidenceJob.job_id)
            .limit(limit)
        )
    )


def evidence_input(*, session: Session, job_id: int) -> EvidenceInput | None:
    """The log and trace of a pending row's run (``None``: no such row, or it is read already)."""
    row = session.execute(
        select(EvidenceJob.run_id, Run.status)
        .join(Run, Run.id == EvidenceJob.run_id)
        .where(EvidenceJob.job_id == job_id, EvidenceJob.summarized_at.is_(None))
    ).one_or_none()
    if row is None:
        return None
    if row.status is not RunStatus.OK:
        return EvidenceInput(job_id=job_id, run_id=row.run_id, ok=False, raw_log="", trace=None)
    raw_log = session.scalar(select(RunArtifacts.raw_log).where(RunArtifacts.run_id == row.run_id)) or ""
    trace = session.scalar(
        select(RunFile.content)
        .where(RunFile.run_id == row.run_id, RunFile.kind == "trace")
        .order_by(RunFile.id)
        .limit(1)
    )
    return EvidenceInput(job_id=job_id, run_id=row.run_id, ok=True, raw_log=raw_log, trace=trace)


def read_evidence(item: EvidenceInput) -> dict[str, Any] | None:
    """The summary of a pending row's run; ``None`` for a failed run, or when nothing could read it.

    Whatever a trace does to the reader is caught and logged here: the row is then stored without a
    summary (its side has no evidence) rather than read again, and failing again, on every pass.
    """
    if not item.ok:
        return None
    try:
        summary = summarize(item.raw_log, item.trace)
    except Exception:
        logger.exception("evidence run %d (job %d) could not be read", item.run_id, item.job_id)
        return None
    if item.trace is not None and summary["trace_error"]:
        logger.warning(
            "evidence run %d (job %d): trace not read: %s", item.run_id, item.job_id, summary["trace_error"]
        )
    return summary


def begin_reading(*, session: Session, job_id: int) -> int | None:
    """Count a reading of a pending row as begun (commit before parsing); the readings so far, or
    ``None`` when the row is read already or gone. Past :data:`MAX_READ_ATTEMPTS` the caller gives
    it up (:func:`give_up_reading`) instead of reading it."""
    link = session.get(EvidenceJob, job_id, with_for_update=True)
    if link is None or link.summarized_at is not None or link.run_id is None:
        return None
    link.read_attempts += 1
    session.flush()
    return link.read_attempts


def give_up_reading(*, session: Session, job_id: int, now: dt.datetime) -> bool:
    """Mark a row whose readings never finished as read, without a summary (its side has no
    evidence); ``False`` when it was read meanwhile."""
    link = session.get(EvidenceJob, job_id, with_for_update=True)
    if link is None or link.summarized_at is not None:
        return False
    logger.error(
        "evidence run %s (job %d) given up after %d readings that never finished",
        link.run_id,
        job_id,
        link.read_attempts,
    )
    link.summarized_at = now
    session.flush()
    return True


def store_evidence_summary(
    *, session: Session, item: EvidenceInput, summary: dict[str, Any] | None, now: dt.datetime
) -> bool:
    """Keep what was read from ``item``'s run and mark its row read; ``False`` when the row is gone,
    was read by someone else meanwhile, or links another run now (the row is read locked)."""
    link = session.get(EvidenceJob, item.job_id, with_for_update=True)
    if link is None or link.summarized_at is not None or link.run_id != item.run_id:
        return False
    if summary is not None:  # left unset, the column stays SQL NULL (None would store JSON null)
        link.summary = summary
    link.summarized_at = now
    session.flush()
    return True


def summarize_pending_evidence(*, session: Session, now: dt.datetime, limit: int = PENDING_LIMIT) -> int:
    """Read the pending rows in this one session (tests, the command line); returns how many were stored.

    The service reads them with :func:`tracker.workflows.evidence_reading.summarize_pending`, which
    holds no transaction while a trace is parsed.
    """
    stored = 0
    for job_id in pending_evidence(session=session, limit=limit):
        item = evidence_input(session=session, job_id=job_id)
        if item is not None and store_evidence_summary(
            session=session, item=item, summary=read_evidence(item), now=now
        ):
            stored += 1
    return stored


def _sides(session: Session, owner: Any, ids: Collection[int]) -> dict[int, Sides]:
    found: dict[int, Sides] = {}
    if not ids:
        return found
    condition: ColumnElement[bool] = owner.in_(sorted(ids))
    rows = session.execute(
        select(owner.label("owner"), EvidenceJob.side, EvidenceJob.summary)
        .where(condition, EvidenceJob.summary.is_not(None))
        .order_by(EvidenceJob.job_id)
    ).all()
    for row in rows:
        sides = found.setdefault(row.owner, ([], []))
        sides[0 if row.side is Arm.BASE else 1].append(row.summary)
    return found


def alert_evidence(*, session: Session, alert_ids: Collection[int]) -> dict[int, Sides]:
    """Per alert id, the summaries of its last good commit's and its culprit's evidence runs."""
    return _sides(session, EvidenceJob.alert_id, alert_ids)


def result_evidence(*, session: Session, result_ids: Collection[int]) -> dict[int, Sides]:
    """Per comparison result id, the summaries of its base's and its head's evidence runs."""
    return _sides(session, EvidenceJob.comparison_result_id, result_ids)
