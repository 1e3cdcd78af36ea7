"""Shapes of the runner and job-queue endpoints."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracker.jobs import RunnerStatus
from tracker.models import CarriedPatch, Job
from tracker.schemas import CommitIn, PatchRefs
from web.schemas.params import InModel


class RunnerIn(InModel):
    """What a runner advertises when it registers."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@\-]*$")]
    hardware: Annotated[str, Field(min_length=1, max_length=64)]
    gpu_count: Annotated[int, Field(ge=1, le=1024)]
    labels: dict[str, str] = Field(default_factory=dict)
    version: Annotated[str, Field(max_length=64)] = ""
    host: Annotated[str, Field(max_length=255)] = ""


class RunnerOut(BaseModel):
    """A registered runner and what it is doing."""

    name: str
    hardware: str
    gpu_count: int
    labels: dict[str, Any]
    version: str
    host: str
    last_heartbeat_at: dt.datetime | None
    online: bool
    current_job_id: int | None


class AttemptIn(InModel):
    """Names the attempt a heartbeat or release is about."""

    model_config = ConfigDict(extra="forbid")

    attempt: Annotated[int, Field(ge=1, le=1000)]
    reason: Annotated[str, Field(max_length=2000)] = ""


class LeaseOut(BaseModel):
    """Answer to a heartbeat."""

    job_id: int
    attempt: int
    lease_expires_at: dt.datetime


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
    attempt_history: list[dict[str, Any]]
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


class ClaimedRepository(BaseModel):
    """Where to fetch the candidate from."""

    name: str
    url: str
    default_branch: str


class ClaimedCarried(BaseModel):
    """A carried patch the builder applies unless the base already has it."""

    ref: str
    reason: str


class ClaimedCandidate(BaseModel):
    """Base commit and patches, in order."""

    base_sha: str
    patches: list[str]
    carried: list[ClaimedCarried]


class ClaimedCase(BaseModel):
    """The case to run, with every parameter and flag."""

    slug: str
    version: int
    model: str
    task: str
    workload: str
    mode: str
    num_gpus: int
    requests: int
    timeout_s: int
    params: dict[str, Any]
    flags: dict[str, Any]


class JobSpecOut(BaseModel):
    """Answer to a claim: everything a runner needs to build the candidate and run the case."""

    job_id: int
    attempt: int
    reason: str
    hardware: str
    lease_seconds: int
    lease_expires_at: dt.datetime
    repository: ClaimedRepository
    candidate: ClaimedCandidate
    case: ClaimedCase


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
        attempt_history=list(job.attempt_history),
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
