"""Uploads: a runner's result for one attempt of a job, an import made outside any job, and the answer.

The same :class:`ResultIn` validates an upload over HTTP and an ``import-log`` written straight to the
database, and the runner builds its bodies from these classes, so all refuse bad input with the same
message naming the field.
"""

from __future__ import annotations

from typing import Annotated, Literal, overload

from pydantic import BaseModel, Field, Strict, model_validator

from wire.base import RecordIn
from wire.digests import DIGEST_VERSION, Since, digest_version, upload_digest
from wire.fields import AwareDatetime, Count, FreeFormObject, NonNegativeMs, PatchRefs, PositiveMs, Sha
from wire.files import FilesIn
from wire.limits import MAX_FAILURE_REASON
from wire.outputs import OutputIn


class CommitIn(RecordIn):
    """The commit a result measured (the candidate's base)."""

    sha: Sha
    committed_at: AwareDatetime | None = Field(
        default=None, description="committer time, with offset, between 1970 and 2100"
    )
    title: Annotated[str, Field(max_length=512)] = ""
    author_name: Annotated[str, Field(max_length=255)] = ""
    author_email: Annotated[str, Field(max_length=255)] = ""
    branch: Annotated[str, Field(max_length=255)] | None = None
    parents: Annotated[list[Sha], Field(max_length=64)] = []


class StageIn(RecordIn):
    """One pipeline stage time."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    duration_ms: NonNegativeMs


class CompileCounters(RecordIn):
    """torch.compile / Dynamo counters of the run, when known."""

    graph_breaks: Count | None = None
    recompiles: Count | None = None
    unique_graphs: Count | None = None
    frames_compiled: Count | None = None


class MeasurementIn(RecordIn):
    """What a run measured (or why it failed): the part shared by imports and job uploads.

    A successful result needs per-step times or the log's reported average step time; the value
    of record is the median of the step times when they are known, else that average.
    """

    status: Literal["ok", "failed"] = "ok"
    failure_reason: Annotated[str, Field(max_length=MAX_FAILURE_REASON)] | None = None
    step_times_ms: list[PositiveMs] = Field(
        default_factory=list, description="per denoise step, step 0 first"
    )
    denoise_step_count: Annotated[int, Strict(), Field(gt=0, le=100_000)] | None = None
    denoise_step_mean_ms: PositiveMs | None = Field(default=None, description="average reported by the log")
    denoise_stage_ms: PositiveMs | None = None
    stages: Annotated[list[StageIn], Field(max_length=256)] = []
    e2e_ms: PositiveMs | None = None
    peak_memory_mb: Annotated[float, Strict(), Field(ge=1e-3, allow_inf_nan=False, le=1e8)] | None = None
    compile: CompileCounters = CompileCounters()
    requests_seen: Count = 0
    warmup_requests: Count = 0
    warnings: Annotated[list[Annotated[str, Field(max_length=2000)]], Field(max_length=200)] = []
    sources: Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=8)] = []
    environment: FreeFormObject = Field(default_factory=dict)
    command: Annotated[str, Field(max_length=20_000)] = ""
    raw_log: str = ""
    log_truncated: bool = False
    perf_dump: FreeFormObject | None = None
    output: Annotated[OutputIn | None, Since(2)] = Field(
        default=None, description="the seeded output the run saved (digest, shape, PNG references)"
    )
    measured_at: AwareDatetime | None = Field(default=None, description="with offset, between 1970 and 2100")

    @model_validator(mode="after")
    def _consistent_measurement(self) -> MeasurementIn:
        if self.status == "ok":
            if self.failure_reason:
                raise ValueError("failure_reason: only a failed result has a failure reason")
            if not self.step_times_ms and self.denoise_step_mean_ms is None:
                raise ValueError(
                    "step_times_ms: empty, and no denoise_step_mean_ms either; "
                    "a successful result needs per-step times or the average step time"
                )
            if (
                self.step_times_ms
                and self.denoise_step_count is not None
                and self.denoise_step_count != len(self.step_times_ms)
            ):
                raise ValueError(
                    f"denoise_step_count: {self.denoise_step_count} but step_times_ms has "
                    f"{len(self.step_times_ms)} values"
                )
        elif not self.failure_reason:
            raise ValueError("failure_reason: a failed result must say why it failed")
        return self

    @overload
    def digest(self) -> str: ...
    @overload
    def digest(self, version: Literal[1]) -> str: ...
    @overload
    def digest(self, version: int) -> str | None: ...
    def digest(self, version: int = DIGEST_VERSION) -> str | None:
        """SHA-256 of the upload (without its idempotency key) in canonical form ``version``, as stored.

        ``None``: the upload holds a field newer than ``version`` with a value other than its
        default, so no upload digested in that version was this one. Every upload has a digest in
        the current version and in version 1. A field added to an upload is marked with the version
        it came in: see :mod:`wire.digests` for the rule.
        """
        return upload_digest(self, version, exclude={"idempotency_key"})

    def matches_digest(self, stored: str) -> bool:
        """Whether this is the upload ``stored`` is the digest of, digested in the version it names."""
        version = digest_version(stored)
        return version is not None and self.digest(version) == stored


class ResultIn(MeasurementIn):
    """One benchmark result made outside a job (an import), as ``POST /api/v1/results`` takes it."""

    case: Annotated[str, Field(min_length=1, max_length=128, description="case slug")]
    hardware: Annotated[str, Field(min_length=1, max_length=64)]
    commit: CommitIn
    patches: PatchRefs = Field(default_factory=list)
    idempotency_key: (
        Annotated[str, Field(min_length=8, max_length=128, pattern=r"^[A-Za-z0-9_.:\-]+$")] | None
    ) = None


class BuildInfo(RecordIn):
    """How the runner built the candidate it measured."""

    head_sha: Sha | None = None
    tree_sha: Sha | None = None
    patches_applied: Annotated[list[Annotated[str, Field(max_length=255)]], Field(max_length=64)] = []
    patches_already_in: Annotated[list[Annotated[str, Field(max_length=255)]], Field(max_length=64)] = []
    build_reused: bool = False


class JobResultIn(MeasurementIn):
    """A runner's upload for one attempt of a leased job; case, hardware and candidate come from the job."""

    attempt: Annotated[int, Strict(), Field(ge=1, le=1000)]
    build: BuildInfo = BuildInfo()
    output_digest: Annotated[str, Field(max_length=128)] | None = None
    request_latencies_ms: Annotated[list[PositiveMs], Field(max_length=1000)] = []
    commit: CommitIn | None = Field(default=None, description="metadata of the base commit, as git knows it")
    files: Annotated[FilesIn, Since(2)] = Field(
        default_factory=list, description="files the run made: a profiler trace"
    )


class ResultCreated(BaseModel):
    """Answer to ``POST /api/v1/results``."""

    run_id: int
    created: bool
    status: str
    denoise_step_ms: float | None
    url: str
    warnings: list[str] = Field(
        default_factory=list,
        description="what the upload said about an already known commit (title, author, time, parents) "
        "that differs from the stored value and was therefore not applied",
    )
