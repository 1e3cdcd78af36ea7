"""Shapes of the job-queue endpoints, and the runner protocol's answers built from the ORM.

The runner protocol's own shapes (register, claim, heartbeat, release) live in :mod:`wire.leases`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracker.models import CarriedPatch, Job
from tracker.queue.runners import RunnerStatus
from web.schemas.params import InModel
from wire import (
    ClaimedCandidate,
    ClaimedCarried,
    ClaimedCase,
    ClaimedRepository,
    CommitIn,
    JobSpecOut,
    PatchRefs,
    RunnerOut,
)


class AttemptOut(BaseModel):
    """One ended attempt of a job: who held the lease and how it ended."""

    attempt: int
    runner: str | None
    outcome: str = Field(description="done, failed, released or lease expired")
    reason: str
    at: dt.datetime = Field(description="when the attempt ended")


class JobOut(BaseModel):
    """A job in the queue."""

    id: int
    state: str
    reason: str
    priority: int
    case: str
    hardware: str
    candidate: str
    attempts: int
    max_attempts: int
    attempt_history: list[AttemptOut]
    failure_reason: str | None
    leased_by: str | None
    lease_expires_at: dt.datetime | None
    created_at: dt.datetime
    finished_at: dt.datetime | None


class EnqueueIn(InModel):
    """A manual request to measure a case on a candidate."""

    model_config = ConfigDict(extra="forbid")

    case: Annotated[str, Field(min_length=1, max_length=128)]
    hardware: Annotated[str, Field(min_length=1, max_length=64)]
    commit: CommitIn
    patches: PatchRefs = Field(default_factory=list)
    reason: Literal["manual", "nightly", "pr", "bisect", "confirm"] = "manual"
    priority: Annotated[int, Field(ge=-1000, le=1000)] = 0
    purpose: Annotated[str, Field(max_length=64)] = ""


class EnqueueOut(BaseModel):
    """Answer to an enqueue: the job, and whether it was new."""

    job: JobOut
    created: bool


def job_out(job: Job) -> JobOut:
    """From the ORM object."""
    return JobOut(
        id=job.id,
        state=job.state.value,
        reason=job.reason.value,
        priority=job.priority,
        case=job.case.slug,
        hardware=job.hardware_kind.name,
        candidate=job.candidate.label,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        attempt_history=[
            AttemptOut(
                attempt=attempt.number,
                runner=attempt.runner_name,
                outcome=attempt.outcome.value,
                reason=attempt.reason,
                at=attempt.ended_at,
            )
            for attempt in job.attempt_history
        ],
        failure_reason=job.failure_reason,
        leased_by=job.leased_by.name if job.leased_by else None,
        lease_expires_at=job.lease_expires_at,
        created_at=job.created_at,
        finished_at=job.finished_at,
    )


def job_spec_out(
    job: Job, carried: list[CarriedPatch], lease_seconds: int, *, requests: int | None = None
) -> JobSpecOut:
    """The claim answer for a freshly leased job; ``requests`` overrides the case's (a comparison's)."""
    case = job.case
    repository = job.candidate.base_commit.repository
    assert job.lease_expires_at is not None  # a leased job always has an expiry
    return JobSpecOut(
        job_id=job.id,
        attempt=job.attempts,
        reason=job.reason.value,
        hardware=job.hardware_kind.name,
        lease_seconds=lease_seconds,
        lease_expires_at=job.lease_expires_at,
        repository=ClaimedRepository(
            name=repository.name, url=repository.url, default_branch=repository.default_branch
        ),
        candidate=ClaimedCandidate(
            base_sha=job.candidate.base_commit.sha,
            patches=[patch.ref for patch in job.candidate.patches],
            carried=[ClaimedCarried(ref=patch.ref, reason=patch.reason) for patch in carried],
        ),
        case=ClaimedCase(
            slug=case.slug,
            version=case.version,
            model=case.model,
            task=case.task,
            workload=case.workload.value,
            mode=case.mode.value,
            num_gpus=case.num_gpus,
            requests=case.requests if requests is None else requests,
            timeout_s=case.timeout_s,
            params=dict(case.params),
            flags=dict(case.flags),
        ),
    )


def runner_out(status: RunnerStatus) -> RunnerOut:
    """From the tracker's runner status."""
    runner = status.runner
    return RunnerOut(
        name=runner.name,
        hardware=runner.hardware_kind.name,
        gpu_count=runner.gpu_count,
        labels=dict(runner.labels),
        version=runner.version,
        host=runner.host,
        last_heartbeat_at=runner.last_heartbeat_at,
        online=status.online,
        current_job_id=status.current_job_id,
    )
