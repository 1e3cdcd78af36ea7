"""A run's uploaded files (a profiler trace) and what its evidence job was evidence for."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, undefer

from tracker.enums import Arm
from tracker.errors import NotFound
from tracker.models import ComparisonResult, EvidenceJob, RunFile


@dataclass(frozen=True)
class EvidenceFor:
    """What an evidence run shows: an alert's culprit (or the commit before it), or a comparison
    result's regression (its base or its head), and whether its run is still being read."""

    side: Arm
    alert_id: int | None
    comparison_id: int | None
    being_read: bool = False  # linked, its log and trace not summarised yet (read after the upload)


def run_files(*, session: Session, run_id: int) -> list[RunFile]:
    """The files of a run, by name (their bytes are not loaded)."""
    return list(session.scalars(select(RunFile).where(RunFile.run_id == run_id).order_by(RunFile.name)))


def run_file(*, session: Session, run_id: int, name: str) -> RunFile:
    """One file of a run with its bytes; :class:`NotFound` when the run has no file of that name."""
    found = session.scalar(
        select(RunFile)
        .where(RunFile.run_id == run_id, RunFile.name == name)
        .options(undefer(RunFile.content))
    )
    if found is None:
        raise NotFound(f"run {run_id} has no file {name!r}")
    return found


def evidence_of_job(*, session: Session, job_id: int | None) -> EvidenceFor | None:
    """What an evidence job is evidence for (``None``: not an evidence job)."""
    link = session.get(EvidenceJob, job_id) if job_id is not None else None
    if link is None:
        return None
    result = session.get(ComparisonResult, link.comparison_result_id) if link.comparison_result_id else None
    return EvidenceFor(
        link.side,
        link.alert_id,
        result.comparison_id if result is not None else None,
        being_read=link.run_id is not None and link.summarized_at is None,
    )
