"""A flagged run (measured beside a CPU hog, on a throttled GPU: :mod:`tracker.ingest.conditions`)
is measured once more: its job is queued again, and a bisection step waiting on it waits for the
re-run instead; a re-run flagged again is kept, excluded, and its bisection step skipped.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.detection import bisection
from tracker.enums import BisectionOutcome, JobReason
from tracker.models import Alert, BisectionStep, Job, Run
from tracker.queue.jobs import enqueue_job


def requeue_if_flagged(*, session: Session, job: Job, run: Run, now: dt.datetime) -> Job | None:
    """Queue ``job`` once more when ``run`` was flagged; the re-run job, or ``None``.

    The re-run measures the same candidate, case and hardware for the same reason, and keeps the
    comparison round and arm and the alert, so it takes the flagged run's place. A job that is
    itself such a re-run is not queued again: its flagged run stays stored and excluded. Calling
    this twice for the same run queues nothing more.
    """
    if run.measurement_flag is None or run.job_id != job.id:
        return None
    if run.rerun_job_id is not None:
        return session.get(Job, run.rerun_job_id)
    if _is_rerun(session, job):
        if job.reason is JobReason.BISECT:
            _bisection_gives_up_on(session, job, run, now)
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
        _bisection_waits_for(session, job, rerun, run)
    session.flush()
    return rerun


def _is_rerun(session: Session, job: Job) -> bool:
    """Whether ``job`` was queued because an earlier run was flagged."""
    return session.scalar(select(Run.id).where(Run.rerun_job_id == job.id).limit(1)) is not None


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


def _bisection_waits_for(session: Session, job: Job, rerun: Job, run: Run) -> None:
    """The bisection step that waited for ``job`` waits for its re-run instead."""
    step = _pending_step(session, job)
    if step is not None:
        step.job_id = rerun.id
        step.note = f"run {run.id} was flagged ({run.excluded_reason}): measuring again in job {rerun.id}"[
            :2000
        ]


def _bisection_gives_up_on(session: Session, job: Job, run: Run, now: dt.datetime) -> None:
    """A re-run flagged again: the step's commit could not be measured; bisection moves on."""
    step = _pending_step(session, job)
    if step is None:
        return
    step.outcome = BisectionOutcome.SKIPPED
    step.note = f"could not measure: run {run.id} flagged twice ({run.excluded_reason})"[:2000]
    session.flush()
    alert = session.get(Alert, step.alert_id)
    if alert is not None:
        bisection.advance(session=session, alert=alert, now=now)
