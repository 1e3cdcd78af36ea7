"""Registering a runner, leasing a job (the job spec a claim answers with), heartbeats and releases.

A release answers with the job as the queue shows it (``web.schemas.JobOut``), which no runner reads.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from wire.base import InModel
from wire.limits import MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_RUNNER_LABELS


def _printable_label(value: str) -> str:
    if not value.isprintable():
        raise ValueError("must be printable text on one line: no control, format or line-break characters")
    return value


def _label_key(key: str) -> str:
    if any(character.isspace() or character == "=" for character in _printable_label(key)):
        raise ValueError("a label's key holds no spaces and no '=' (the runner's --label is KEY=VALUE)")
    return key


LabelKey = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_KEY), AfterValidator(_label_key)]
LabelValue = Annotated[str, Field(max_length=MAX_LABEL_VALUE), AfterValidator(_printable_label)]


class RunnerIn(InModel):
    """What a runner advertises when it registers."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@\-]*$")]
    hardware: Annotated[str, Field(min_length=1, max_length=64)]
    gpu_count: Annotated[int, Field(ge=1, le=1024)]
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        max_length=MAX_RUNNER_LABELS,
        description=f"at most {MAX_RUNNER_LABELS}, of printable text on one line: keys of at most "
        f"{MAX_LABEL_KEY} characters without spaces or '=', values of at most {MAX_LABEL_VALUE}",
    )
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
