"""Shapes of the job-queue endpoints.

The runner protocol's shapes (register, claim, heartbeat, release) live in :mod:`wire.leases`, and
:mod:`web.schemas.runner_protocol` builds them.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracker.models import Job, JobAttempt
from tracker.queue.jobs import Enqueued
from web.schemas.params import InModel
from wire import CommitIn, PatchRefs


class AttemptOut(BaseModel):
    """One ended attempt of a job: who held the lease and how it ended."""

    attempt: int
    runner: str | None
    outcome: str = Field(description="done, failed, released or lease expired")
    reason: str
    at: dt.datetime = Field(description="when the attempt ended")

    @classmethod
    def of(cls, attempt: JobAttempt) -> AttemptOut:
        """From the ORM object."""
        return cls(
            attempt=attempt.number,
            runner=attempt.runner_name,
            outcome=attempt.outcome.value,
            reason=attempt.reason,
            at=attempt.ended_at,
        )


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

    @classmethod
    def of(cls, job: Job) -> JobOut:
        """From the ORM object, with its ended attempts."""
        return cls(
            id=job.id,
            state=job.state.value,
            reason=job.reason.value,
            priority=job.priority,
            case=job.case.slug,
            hardware=job.hardware_kind.name,
            candidate=job.candidate.label,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            attempt_history=[AttemptOut.of(attempt) for attempt in job.attempt_history],
            failure_reason=job.failure_reason,
            leased_by=job.leased_by.name if job.leased_by else None,
            lease_expires_at=job.lease_expires_at,
            created_at=job.created_at,
            finished_at=job.finished_at,
        )


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

    @classmethod
    def of(cls, outcome: Enqueued) -> EnqueueOut:
        """From the queue's answer."""
        return cls(job=JobOut.of(outcome.job), created=outcome.created)
