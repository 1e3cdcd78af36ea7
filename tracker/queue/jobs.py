"""The job queue: enqueue once, lease to one runner at a time, expire, retry, finish.

Leases: a claim (:mod:`tracker.queue.claims`) hands the oldest, highest-priority queued job of the
runner's hardware kind (and no more GPUs than it has) to exactly one runner. Heartbeats extend a
lease; a lease that runs out (the scheduler looks every few seconds, off the claim path) puts the
job back in the queue (its attempt counter already counts the lost attempt), and after
``max_attempts`` the job fails with every attempt's reason. A job put (back) in the queue wakes
the runners waiting for its hardware kind (:mod:`tracker.queue.wakeups`).

Paired checks (a suspect's confirmation, a bisection step's rounds) run every round on one
runner, so that runner-to-runner differences cannot pose as a change: the first claim of one of
their arms pins the comparison to its runner, and other runners leave its jobs alone — unless the
pinned runner has not been heard from for :data:`PIN_STALE_AFTER`, when anyone may take over.

Runners themselves (registration, the token each acts with, the registry) are
:mod:`tracker.queue.runners`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from tracker.access.redaction import redact_text
from tracker.enums import FINISHED_JOB_STATES, Arm, AttemptOutcome, ComparisonKind, JobReason, JobState
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import Candidate, Case, HardwareKind, Job, JobAttempt, Runner, utcnow
from tracker.observability.metrics import record_lease_expiries
from tracker.queue.wakeups import job_queued

DEFAULT_LEASE = dt.timedelta(minutes=5)
# A pinned runner silent this long (no claim, heartbeat or registration) no longer holds its checks.
PIN_STALE_AFTER = dt.timedelta(minutes=30)
PINNED_KINDS = (ComparisonKind.CONFIRMATION, ComparisonKind.BISECT)
# Who waits for a job decides its place in the queue: a confirmation holds an alert back, a
# bisection narrows one down, a pull request's author waits for a comment; nightly runs fill the rest.
PRIORITY: dict[JobReason, int] = {
    JobReason.CONFIRM: 30,
    JobReason.BISECT: 20,
    JobReason.EVIDENCE: 15,
    JobReason.PR: 10,
    JobReason.MANUAL: 5,
    JobReason.NIGHTLY: 0,
}


@dataclass(frozen=True)
class Enqueued:
    """The job for a request to enqueue, and whether this call created it."""

    job: Job
    created: bool


def job_key(
    *, candidate: Candidate, case: Case, hardware: HardwareKind, reason: JobReason, purpose: str = ""
) -> str:
    """Idempotency key: one job per candidate, case version, hardware kind and purpose."""
    return f"{reason.value}:{candidate.key[:32]}:{case.id}:{hardware.id}:{purpose}"[:128]


def enqueue_job(
    *,
    session: Session,
    candidate: Candidate,
    case: Case,
    hardware: HardwareKind,
    reason: JobReason,
    priority: int | None = None,
    max_attempts: int = 3,
    purpose: str = "",
    requested_by: str = "",
    comparison_id: int | None = None,
    comparison_round: int | None = None,
    arm: Arm | None = None,
    alert_id: int | None = None,
) -> Enqueued:
    """Queue a job unless the same one (candidate, case, hardware, reason, purpose) exists.

    ``priority`` defaults to the reason's place in the queue (:data:`PRIORITY`).
    """
    if case.num_gpus < 1:
        raise InvalidInput("case", f"case {case.slug!r} needs at least one GPU slot")
    key = job_key(candidate=candidate, case=case, hardware=hardware, reason=reason, purpose=purpose)
    existing = session.scalar(select(Job).where(Job.idempotency_key == key))
    if existing is not None:
        return Enqueued(job=existing, created=False)
    job = Job(
        idempotency_key=key,
        candidate=candidate,
        case=case,
        hardware_kind=hardware,
        num_gpus=case.num_gpus,
        reason=reason,
        priority=PRIORITY[reason] if priority is None else priority,
        state=JobState.QUEUED,
        max_attempts=max_attempts,
        attempt_history=[],
        requested_by=requested_by,
        comparison_id=comparison_id,
        comparison_round=comparison_round,
        arm=arm,
        alert_id=alert_id,
    )
    try:
        with session.begin_nested():
            session.add(job)
            session.flush()
            job_queued(session=session, hardware_kind_id=hardware.id)
    except IntegrityError:
        # Another process enqueued the same job between our check and insert.
        existing = session.scalar(select(Job).where(Job.idempotency_key == key))
        if existing is None:
            raise
        return Enqueued(job=existing, created=False)
    return Enqueued(job=job, created=True)


def expire_leases(*, session: Session, now: dt.datetime | None = None) -> list[Job]:
    """Put jobs whose lease ran out back in the queue, or fail them after their last attempt.

    Returns every job whose lease ran out; those now ``failed`` ended, and what follows from that
    (a comparison's round, a bisection step) is :mod:`tracker.workflows.jobs`'s to do.
    """
    now = now or utcnow()
    expired = session.scalars(
        select(Job)
        .where(Job.state == JobState.LEASED, Job.lease_expires_at < now)
        .order_by(Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    for job in expired:
        runner = session.get(Runner, job.leased_by_runner_id) if job.leased_by_runner_id else None
        _end_attempt(
            job,
            outcome=AttemptOutcome.LEASE_EXPIRED,
            reason=f"lease expired at {job.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC without a heartbeat",
            runner=runner,
            now=now,
        )
        if job.attempts >= job.max_attempts:
            job.state = JobState.FAILED
            job.finished_at = now
            job.failure_reason = _all_reasons(job)
        else:
            job.state = JobState.QUEUED
            job_queued(session=session, hardware_kind_id=job.hardware_kind_id)
    session.flush()
    record_lease_expiries(len(expired))
    return list(expired)


def live_job(
    *, session: Session, runner: Runner, job_id: int, attempt: int, now: dt.datetime | None = None
) -> Job:
    """The job if ``attempt`` is its current, unexpired lease held by ``runner``; else 409/404."""
    now = now or utcnow()
    job = session.scalar(select(Job).where(Job.id == job_id).with_for_update())
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.state is not JobState.LEASED or job.attempts != attempt or job.leased_by_runner_id != runner.id:
        raise Conflict(
            f"attempt {attempt} of job {job_id} is no longer leased to {runner.name} "
            f"(job is {job.state.value}, at attempt {job.attempts})"
        )
    expired_at = job.lease_expires_at
    if expired_at is not None and expired_at < now:
        raise Conflict(f"the lease of attempt {attempt} of job {job_id} expired at {expired_at:%H:%M:%S} UTC")
    return job


def heartbeat(
    *,
    session: Session,
    runner: Runner,
    job_id: int,
    attempt: int,
    lease: dt.timedelta = DEFAULT_LEASE,
    now: dt.datetime | None = None,
) -> Job:
    """Extend the lease of a running attempt."""
    now = now or utcnow()
    job = live_job(session=session, runner=runner, job_id=job_id, attempt=attempt, now=now)
    job.lease_expires_at = now + lease
    runner.last_heartbeat_at = now
    session.flush()
    return job


def release_job(
    *,
    session: Session,
    runner: Runner,
    job_id: int,
    attempt: int,
    reason: str,
    now: dt.datetime | None = None,
) -> Job:
    """Give a job back (the runner is shutting down); the attempt does not count against retries."""
    now = now or utcnow()
    job = live_job(session=session, runner=runner, job_id=job_id, attempt=attempt, now=now)
    _end_attempt(
        job,
        outcome=AttemptOutcome.RELEASED,
        reason=redact_text(reason) or "released by the runner",  # shown on the job's page
        runner=runner,
        now=now,
    )
    job.max_attempts += 1  # a clean hand-back is not a failed attempt
    job.state = JobState.QUEUED
    job_queued(session=session, hardware_kind_id=job.hardware_kind_id)
    session.flush()
    return job


def finish_job(
    *, job: Job, runner: Runner, failure_reason: str | None, now: dt.datetime | None = None
) -> None:
    """Close a job after its attempt uploaded a run: done, or failed with the run's reason."""
    now = now or utcnow()
    _end_attempt(
        job,
        outcome=AttemptOutcome.FAILED if failure_reason else AttemptOutcome.DONE,
        reason=failure_reason or "",
        runner=runner,
        now=now,
    )
    job.state = JobState.FAILED if failure_reason else JobState.DONE
    job.failure_reason = failure_reason
    job.finished_at = now


def cancel_job(*, session: Session, job_id: int, reason: str, now: dt.datetime | None = None) -> Job:
    """Cancel a queued or leased job (a leased attempt's later upload is then refused).

    Nothing else moves: :func:`tracker.workflows.jobs.cancel` also tells the job's comparison or
    bisection.
    """
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.state in FINISHED_JOB_STATES:
        raise Conflict(f"job {job_id} is already {job.state.value}")
    job.state = JobState.CANCELLED
    job.failure_reason = reason
    job.finished_at = now or utcnow()
    session.flush()
    return job


def _end_attempt(
    job: Job, *, outcome: AttemptOutcome, reason: str, runner: Runner | None, now: dt.datetime
) -> None:
    job.attempt_history.append(
        JobAttempt(
            number=job.attempts,
            runner=runner,
            outcome=outcome,
            reason=reason,
            started_at=job.leased_at,
            ended_at=now,
        )
    )
    job.leased_by_runner_id = None
    job.lease_expires_at = None


def _all_reasons(job: Job) -> str:
    lines = [
        f"attempt {entry.number}: {entry.outcome.value}: {entry.reason}" for entry in job.attempt_history
    ]
    return f"failed after {job.attempts} attempts; " + "; ".join(lines)


def list_jobs(
    *, session: Session, state: JobState | None = None, hardware: HardwareKind | None = None, limit: int = 200
) -> list[Job]:
    """Jobs newest first, optionally of one state and hardware kind."""
    query = (
        select(Job)
        .order_by(Job.id.desc())
        .limit(limit)
        .options(
            selectinload(Job.case),
            selectinload(Job.hardware_kind),
            selectinload(Job.candidate),
            selectinload(Job.leased_by),
            selectinload(Job.attempt_history).selectinload(JobAttempt.runner),
        )
    )
    if state is not None:
        query = query.where(Job.state == state)
    if hardware is not None:
        query = query.where(Job.hardware_kind_id == hardware.id)
    return list(session.scalars(query))


def get_job(*, session: Session, job_id: int) -> Job:
    """One job by id."""
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job
