"""Evidence runs in the database: read one when it is stored, load the summaries a diagnosis compares.

:func:`record_evidence_run` reads a stored evidence run (its log and its trace) once into its
:class:`~tracker.models.EvidenceJob`'s summary, so a diagnosis never opens a trace again;
:func:`alert_evidence` and :func:`result_evidence` load the summaries of both sides in one query.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from tracker.diagnosis.evidence import summarize
from tracker.models import Arm, EvidenceJob, Job, Run, RunArtifacts, RunFile, RunStatus

Sides = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (base side, head side) summaries


def record_evidence_run(*, session: Session, job: Job, run: Run, now: dt.datetime) -> EvidenceJob | None:
    """Read the evidence run ``run`` of ``job`` into its evidence row (``None``: not an evidence job).

    A failed run is linked but summarises nothing: its side stays without evidence.
    """
    link = session.get(EvidenceJob, job.id)
    if link is None:
        return None
    link.run_id = run.id
    link.recorded_at = now
    if run.status is RunStatus.OK:
        raw_log = session.scalar(select(RunArtifacts.raw_log).where(RunArtifacts.run_id == run.id)) or ""
        trace = session.scalar(
            select(RunFile.content)
            .where(RunFile.run_id == run.id, RunFile.kind == "trace")
            .order_by(RunFile.id)
            .limit(1)
        )
        link.summary = summarize(raw_log, trace)
    session.flush()
    return link


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
