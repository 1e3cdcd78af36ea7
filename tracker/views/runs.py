"""One run as its page and the API show it, and the hardware kinds a case has runs on."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tracker.enums import Arm
from tracker.errors import NotFound
from tracker.models import Candidate, Case, Commit, HardwareKind, Job, Run, RunOutput
from tracker.outputs.checks import OutputCheck, check_outputs, tolerance_of


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


@dataclass(frozen=True)
class RunOutputCheck:
    """A run's output against the one it is naturally compared with, for its page."""

    check: OutputCheck
    against_run_id: int
    against: str  # "base run 41 of comparison 7", "run 40 of 5ca1e00 (the commit before)"


def run_output_check(*, session: Session, run: Run) -> RunOutputCheck | None:
    """A comparison arm's output against the other arm's run of its round; a plain run's against the
    newest run with an output of the commit before it in the series. ``None`` when there is nothing
    to compare with (or the run kept no output)."""
    job = session.get(Job, run.job_id) if run.job_id is not None else None
    if job is not None and job.comparison_id is not None and job.arm is not None:
        other = _other_arm_run(session, job)
        label = f"{Arm.BASE.value if job.arm is Arm.HEAD else Arm.HEAD.value} run {other} of comparison {job.comparison_id}"
    else:
        other, label = _previous_commit_run(session, run)
    if other is None:
        return None
    case = session.get(Case, run.case_id)
    assert case is not None
    before, after = ([other], [run.id]) if job is None or job.arm is not Arm.BASE else ([run.id], [other])
    check = check_outputs(session, before=before, after=after, tolerance_db=tolerance_of(case))
    return RunOutputCheck(check=check, against_run_id=other, against=label)


def _other_arm_run(session: Session, job: Job) -> int | None:
    return session.scalar(
        select(Run.id)
        .join(Job, Job.id == Run.job_id)
        .join(RunOutput, RunOutput.run_id == Run.id)
        .where(
            Job.comparison_id == job.comparison_id,
            Job.comparison_round == job.comparison_round,
            Job.case_id == job.case_id,
            Job.hardware_kind_id == job.hardware_kind_id,
            Job.arm != job.arm,
        )
        .order_by(Run.id.desc())
        .limit(1)
    )


def _previous_commit_run(session: Session, run: Run) -> tuple[int | None, str]:
    commit = session.get(Commit, run.commit_id)
    if commit is None or commit.committed_at is None or not run.candidate.is_plain:
        return None, ""
    row = session.execute(
        select(Run.id, Commit.sha)
        .join(RunOutput, RunOutput.run_id == Run.id)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(
            Run.case_id == run.case_id,
            Run.hardware_kind_id == run.hardware_kind_id,
            Candidate.is_plain,
            Commit.committed_at < commit.committed_at,
        )
        .order_by(Commit.committed_at.desc(), Run.id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None, ""
    return row.id, f"run {row.id} of {row.sha[:7]} (the commit before)"


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


__all__ = ["RunOutputCheck", "case_hardware_names", "get_run", "run_output", "run_output_check"]
