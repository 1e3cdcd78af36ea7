"""A flagged run (measured beside a CPU hog, on a throttled GPU: :mod:`tracker.ingest.conditions`)
is measured again: its job is queued once more, and a bisection step or comparison round waiting on
it waits for the re-run instead.

Contention comes and goes (a neighbour's build, a test run, a core loaded for seconds at a time),
so a re-run that is flagged too is queued again, and again, each try started by a runner that first
waited for a quiet moment (``runners/workloads/quiet.py``), until a budget of time since the first
flagged try is spent (``Settings.flagged_rerun_budget_s``). Only then is the last run kept,
excluded, with the tries counted in its reason, and its bisection step skipped (a comparison's arm
ends without a value). The decision is by time, never by the number of tries: a machine that is
never quiet ends at the budget, however quickly its tries come back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.detection import bisection
from tracker.enums import BisectionOutcome, JobReason
from tracker.models import Alert, BisectionStep, Job, Run
from tracker.queue.jobs import enqueue_job
from tracker.settings import FLAGGED_RERUN_BUDGET_S

DEFAULT_BUDGET = dt.timedelta(seconds=FLAGGED_RERUN_BUDGET_S)


@dataclass(frozen=True)
class FlaggedTries:
    """The tries of one measurement whose runs were all flagged: how many, and since when."""

    count: int
    first_flagged_at: dt.datetime  # when the first flagged run was stored, UTC

    def spent(self, now: dt.datetime) -> dt.timedelta:
        """Time since the first flagged try."""
        return max(now - self.first_flagged_at, dt.timedelta(0))

    def measure_again(self, now: dt.datetime, budget: dt.timedelta) -> bool:
        """Whether the budget leaves room for one more try."""
        return self.spent(now) < budget

    def describe(self, now: dt.datetime, budget: dt.timedelta) -> str:
        """``"try 3, 75 s of the 900 s budget spent"``."""
        return f"try {self.count}, {_seconds(self.spent(now))} of the {_seconds(budget)} budget spent"


def requeue_if_flagged(
    *, session: Session, job: Job, run: Run, now: dt.datetime, budget: dt.timedelta = DEFAULT_BUDGET
) -> Job | None:
    """Queue ``job`` once more when ``run`` was flagged and ``budget`` allows; the re-run job, or ``None``.

    The re-run measures the same candidate, case and hardware for the same reason, and keeps the
    comparison round and arm and the alert, so it takes the flagged run's place. Once ``budget``
    has passed since the first flagged try of this measurement, nothing is queued: the run stays
    stored and excluded, and a bisection step waiting on it is skipped. Calling this twice for the
    same run queues nothing more.
    """
    if run.measurement_flag is None or run.job_id != job.id:
        return None
    if run.rerun_job_id is not None:
        return session.get(Job, run.rerun_job_id)
    tries = flagged_tries(session=session, job=job, now=now)
    if not tries.measure_again(now, budget):
        _give_up(session, job, run, tries, now, budget)
        return None
    rerun = enqueue_job(
        session=session,
        candidate=job.candidate,
        case=job.case,
        hardware=job.hardware_kind,
        reason=job.reason,
        priority=job.priority,
        purpose=f"rerun-of-job{job.id}",
        requested_by=job.requested_by,
        comparison_id=job.comparison_id,
        comparison_round=job.comparison_round,
        arm=job.arm,
        alert_id=job.alert_id,
    ).job
    run.rerun_job_id = rerun.id
    if job.reason is JobReason.BISECT:
        _bisection_waits_for(session, job, rerun, run, tries.describe(now, budget))
    session.flush()
    return rerun


def flagged_tries(*, session: Session, job: Job, now: dt.datetime) -> FlaggedTries:
    """The flagged tries up to ``job``'s, whose run was just flagged: ``job`` and the jobs whose
    flagged runs queued it, one after the other, back to the first."""
    count, first = 1, job
    while True:
        earlier = session.scalar(
            select(Job).join(Run, Run.job_id == Job.id).where(Run.rerun_job_id == first.id).limit(1)
        )
        if earlier is None or earlier.id >= first.id:  # a re-run is always newer than its original
            break
        count, first = count + 1, earlier
    # The first flagged run finished its job when it was stored.
    return FlaggedTries(count=count, first_flagged_at=first.finished_at or now)


def _pending_step(session: Session, job: Job) -> BisectionStep | None:
    if job.alert_id is None:
        return None
    return session.scalar(
        select(BisectionStep).where(
            BisectionStep.alert_id == job.alert_id,
            BisectionStep.job_id == job.id,
            BisectionStep.outcome == BisectionOutcome.PENDING,
        )
    )


def _bisection_waits_for(session: Session, job: Job, rerun: Job, run: Run, tries: str) -> None:
    """The bisection step that waited for ``job`` waits for its re-run instead."""
    step = _pending_step(session, job)
    if step is not None:
        step.job_id = rerun.id
        step.note = (
            f"run {run.id} was flagged ({run.excluded_reason}): measuring again in job {rerun.id} ({tries})"
        )[:2000]


def _give_up(
    session: Session, job: Job, run: Run, tries: FlaggedTries, now: dt.datetime, budget: dt.timedelta
) -> None:
    """The budget is spent: ``run`` stays excluded, saying so; a bisection step on it is skipped."""
    on = f"all {tries.count} tries" if tries.count > 1 else "its one try"
    spent = f"flagged on {on} in {_seconds(tries.spent(now))} (budget {_seconds(budget)})"
    flag = run.excluded_reason
    run.excluded_reason = f"{flag}; {spent}"[:2000]
    if job.reason is not JobReason.BISECT:
        session.flush()
        return
    step = _pending_step(session, job)
    if step is None:
        session.flush()
        return
    step.outcome = BisectionOutcome.SKIPPED
    step.note = f"could not measure: run {run.id} {spent}; the last: {flag}"[:2000]
    session.flush()
    alert = session.get(Alert, step.alert_id)
    if alert is not None:
        bisection.advance(session=session, alert=alert, now=now)


def _seconds(span: dt.timedelta) -> str:
    return f"{span.total_seconds():.0f} s"
