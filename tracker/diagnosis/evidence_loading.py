"""Evidence runs as a diagnosis reads them: a run's log and trace loaded and summarised, the
summaries of both sides loaded.

:func:`evidence_input` loads what an evidence run left (its log and trace) and
:func:`read_evidence` summarises it (no database). A diagnosis never opens a trace:
:func:`alert_evidence` and :func:`result_evidence` load the summaries of both sides in one query,
and a row not read yet adds nothing. Nothing here changes a row: an evidence row's life (queued,
linked to its run at upload, read after the answer, or given up) is the workflows'
(:mod:`tracker.workflows.evidence`, :mod:`tracker.workflows.evidence_reading`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from tracker.diagnosis.evidence import summarize
from tracker.enums import Arm, RunStatus
from tracker.models import EvidenceJob, Run, RunArtifacts, RunFile

logger = logging.getLogger(__name__)
Sides = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (base side, head side) summaries


@dataclass(frozen=True)
class EvidenceInput:
    """What a pending row's run left to read: its log and trace (a failed run: nothing)."""

    job_id: int
    run_id: int
    ok: bool
    raw_log: str
    trace: bytes | None


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
    elif summary["trace_events_dropped"]:
        logger.warning(
            "evidence run %d (job %d): trace read truncated: %d events past the budget not counted",
            item.run_id,
            item.job_id,
            summary["trace_events_dropped"],
        )
    return summary


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
