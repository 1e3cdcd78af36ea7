"""How a bisection step's commit is judged, per alert metric: what the step does next.

:mod:`tracker.detection.bisection` walks the range the same way for every alert; what differs is
how one commit is called. A slowdown's step is called from its step times (there, in
``bisection._judge_speed``); an output alert's step by its seeded output
(:func:`judge_output_step`): the same picture as the last good commit's is good, a change beyond
the case's tolerance against it is bad. A seeded output is deterministic on one machine, so one
run decides and paired rounds are never needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import BisectionOutcome, OutputStatus, RunStatus
from tracker.models import Alert, BisectionStep, Candidate, Run
from tracker.outputs.checks import compare_sides, newest_outputs, tolerance_of

# "called": the step has its outcome; "measure": queue a job for it; "again": measure once more;
# "pair": paired rounds decide; "skip": it cannot be called (``reason`` says why).
StepAction = Literal["called", "measure", "again", "pair", "skip"]


@dataclass(frozen=True)
class Judged:
    """What a step's judgement asks for next, and how many runs it read (a repeat counts them)."""

    action: StepAction
    runs: int = 0
    reason: str = ""


def commit_runs(session: Session, alert: Alert, commit_id: int) -> list[int]:
    """The successful runs of a plain commit on the alert's case and hardware, oldest first."""
    return list(
        session.scalars(
            select(Run.id)
            .join(Candidate, Candidate.id == Run.candidate_id)
            .where(
                Run.case_id == alert.case_id,
                Run.hardware_kind_id == alert.hardware_kind_id,
                Run.commit_id == commit_id,
                Run.status == RunStatus.OK,
                Candidate.is_plain,
            )
            .order_by(Run.id)
        )
    )


def judge_output_step(
    session: Session, alert: Alert, step: BisectionStep, *, run: Run | None, note: str
) -> Judged:
    """Call the step's commit by its output against the last good commit's (``run``: the step's job
    run that has just arrived; ``None``: what the commit has already stored).

    Runs that measured a commit but saved no output leave it to be measured (with ``run``: skipped).
    Left out of detection or not, a run's output counts: contention changes times, not pixels.
    """
    good = alert.last_good_commit
    if good is None:
        return Judged("skip", reason="no last good commit to compare with")
    good_runs = commit_runs(session, alert, good.id)
    step_runs = commit_runs(session, alert, step.commit_id)
    outputs = newest_outputs(session, {*good_runs, *step_runs})
    if run is not None and run.id not in outputs:
        return Judged("skip", reason=f"run {run.id} saved no output")
    if not any(run_id in outputs for run_id in step_runs):
        return Judged("measure")
    if not any(run_id in outputs for run_id in good_runs):
        return Judged("skip", reason=f"the last good commit {good.short_sha} has no saved output")
    check = compare_sides(
        session, outputs, before=good_runs, after=step_runs, tolerance_db=tolerance_of(alert.case)
    )
    if check.status is OutputStatus.MISSING:
        return Judged("skip", reason=check.summary())
    step.outcome = BisectionOutcome.BAD if check.changed else BisectionOutcome.GOOD
    step.note = f"{note}: {check.summary()} against {good.short_sha} (run {check.after_run_id})"
    return Judged("called", runs=sum(1 for run_id in step_runs if run_id in outputs))
