"""One run as its page and the API show it, and the hardware kinds a case has runs on."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tracker.errors import NotFound
from tracker.models import Case, HardwareKind, Run, RunOutput


def get_run(*, session: Session, run_id: int) -> Run:
    """One run with its stages and artifacts (step vector, log, environment)."""
    run = session.scalar(
        select(Run)
        .where(Run.id == run_id)
        .options(selectinload(Run.stages), selectinload(Run.artifacts), selectinload(Run.candidate))
    )
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


def run_output(*, session: Session, run_id: int) -> RunOutput | None:
    """The run's seeded output with its references in order; ``None`` when it saved none."""
    return session.scalar(
        select(RunOutput).where(RunOutput.run_id == run_id).options(selectinload(RunOutput.frames))
    )


def case_hardware_names(*, session: Session, case: Case) -> list[str]:
    """Hardware kinds a case has runs on or is set up for."""
    configured = [entry.hardware_kind.name for entry in case.hardware]
    measured = session.scalars(
        select(HardwareKind.name)
        .join(Run, Run.hardware_kind_id == HardwareKind.id)
        .where(Run.case_id == case.id)
        .distinct()
    ).all()
    return configured + sorted(name for name in measured if name not in configured)


__all__ = ["case_hardware_names", "get_run", "run_output"]
