"""The fleet as the dashboard shows it: runners with their health, and the jobs by state.

Built on :mod:`tracker.queue.jobs` (``list_runners``); every function here is a fixed number of queries,
whatever the number of runners or jobs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload
from sqlalchemy.sql.base import ExecutableOption

from tracker.enums import PENDING_JOB_STATES, AttemptOutcome, JobState
from tracker.models import Case, HardwareKind, Job, JobAttempt, Run, Runner, utcnow
from tracker.queue.runners import RunnerStatus, list_runners

# How many recent jobs to scan for a runner's failed attempts, and how many to show per runner.
FAILURE_SCAN_JOBS = 500
FAILURES_PER_RUNNER = 5


@dataclass(frozen=True)
class AttemptFailure:
    """One attempt that did not end in a result: failed, released, or its lease expired."""

    job_id: int
    case_slug: str
    attempt: int
    outcome: AttemptOutcome
    reason: str
    at: dt.datetime


@dataclass(frozen=True)
class RunnerRow:
    """A runner, how long since it was heard from, what it runs, and what recently went wrong."""

    status: RunnerStatus
    heartbeat_age: dt.timedelta | None
    current_job: Job | None
    recent_failures: list[AttemptFailure]


def runner_rows(
    *, session: Session, offline_after: dt.timedelta, now: dt.datetime | None = None
) -> list[RunnerRow]:
    """Every runner, online first, with its current job and its latest failed attempts."""
    now = now or utcnow()
    statuses = list_runners(session=session, offline_after=offline_after, now=now)
    current_ids = [status.current_job_id for status in statuses if status.current_job_id is not None]
    current = {job.id: job for job in _jobs_by_id(session=session, ids=current_ids)}
    failures = _failed_attempts(session=session, runner_names={status.runner.name for status in statuses})
    return [
        RunnerRow(
            status=status,
            heartbeat_age=now - status.runner.last_heartbeat_at if status.runner.last_heartbeat_at else None,
            current_job=current.get(status.current_job_id) if status.current_job_id is not None else None,
            recent_failures=failures.get(status.runner.name, []),
        )
        for status in statuses
    ]


def _jobs_by_id(*, session: Session, ids: Sequence[int]) -> list[Job]:
    if not ids:
        return []
    return list(session.scalars(select(Job).where(Job.id.in_(ids)).options(*_job_loads())))


def _job_loads() -> list[ExecutableOption]:
    return [
        selectinload(Job.case),
        selectinload(Job.hardware_kind),
        selectinload(Job.candidate),
        selectinload(Job.leased_by),
        selectinload(Job.attempt_history).selectinload(JobAttempt.runner),
    ]


def _failed_attempts(*, session: Session, runner_names: set[str]) -> dict[str, list[AttemptFailure]]:
    """Each runner's newest attempts that ended without a result (among the recent jobs')."""
    if not runner_names:
        return {}
    recent_jobs = select(Job.id).where(Job.attempts > 0).order_by(Job.id.desc()).limit(FAILURE_SCAN_JOBS)
    newest = (
        func.row_number()
        .over(partition_by=JobAttempt.runner_id, order_by=(JobAttempt.ended_at.desc(), JobAttempt.id.desc()))
        .label("newest")
    )
    ranked = (
        select(JobAttempt.id, newest)
        .join(Runner, Runner.id == JobAttempt.runner_id)
        .where(
            Runner.name.in_(runner_names),
            JobAttempt.outcome != AttemptOutcome.DONE,
            JobAttempt.job_id.in_(recent_jobs.scalar_subquery()),
        )
        .subquery()
    )
    rows = session.execute(
        select(JobAttempt, Runner.name, Case.slug)
        .join(ranked, ranked.c.id == JobAttempt.id)
        .join(Runner, Runner.id == JobAttempt.runner_id)
        .join(Job, Job.id == JobAttempt.job_id)
        .join(Case, Case.id == Job.case_id)
        .where(ranked.c.newest <= FAILURES_PER_RUNNER)
        .order_by(Runner.name, JobAttempt.ended_at.desc(), JobAttempt.id.desc())
    ).all()
    found: dict[str, list[AttemptFailure]] = {}
    for attempt, runner_name, case_slug in rows:
        found.setdefault(runner_name, []).append(
            AttemptFailure(
                job_id=attempt.job_id,
                case_slug=case_slug,
                attempt=attempt.number,
                outcome=attempt.outcome,
                reason=attempt.reason,
                at=attempt.ended_at,
            )
        )
    return found


@dataclass(frozen=True)
class JobRow:
    """A job with the run its latest attempt produced, if any."""

    job: Job
    run_id: int | None

    @property
    def last_failure(self) -> str | None:
        """The job's failure reason, else the latest attempt's that ended without a result."""
        if self.job.failure_reason:
            return self.job.failure_reason
        for attempt in reversed(self.job.attempt_history):
            if attempt.outcome is not AttemptOutcome.DONE and attempt.reason:
                return attempt.reason
        return None


def job_rows(
    *,
    session: Session,
    states: Sequence[JobState],
    hardware: HardwareKind | None = None,
    ids: Sequence[int] | None = None,
    limit: int = 100,
) -> list[JobRow]:
    """Jobs in ``states`` (optionally of one hardware kind): pending oldest first, finished newest first."""
    query = select(Job).where(Job.state.in_(states)).limit(limit).options(*_job_loads())
    if hardware is not None:
        query = query.where(Job.hardware_kind_id == hardware.id)
    if ids is not None:
        query = query.where(Job.id.in_(ids))
    if set(states) <= set(PENDING_JOB_STATES):
        query = query.order_by(Job.priority.desc(), Job.id)
    else:
        query = query.order_by(Job.finished_at.desc().nulls_last(), Job.id.desc())
    jobs = list(session.scalars(query))
    runs: dict[int, int] = {}
    if jobs:
        for job_id, run_id in session.execute(
            select(Run.job_id, func.max(Run.id))
            .where(Run.job_id.in_([job.id for job in jobs]))
            .group_by(Run.job_id)
        ):
            if job_id is not None:
                runs[int(job_id)] = int(run_id)
    return [JobRow(job=job, run_id=runs.get(job.id)) for job in jobs]


def hardware_names(*, session: Session) -> list[str]:
    """Every hardware kind's name, for filters."""
    return list(session.scalars(select(HardwareKind.name).order_by(HardwareKind.name)))
