"""Pydantic shapes of what perftrack accepts and returns; ORM classes stay apart from these.

The same :class:`ResultIn` validates an upload over HTTP and an ``import-log`` written straight
to the database, so both refuse bad input with the same message naming the field.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

SHA_PATTERN = re.compile(r"^[0-9a-f]{7,40}$")
# A patch: a commit sha (7-40 hex digits, or 64 in a SHA-256 repository) or a pull request, "#N" or
# "refs/pull/N/head", optionally pinned to its head commit ("@SHA", as tracker.vcs writes it). N is
# checked against MAX_INT32 apart: PR numbers are INTEGER columns.
PATCH_REF_PATTERN = re.compile(
    r"^(?:[0-9a-f]{7,40}|[0-9a-f]{64}|(?:refs/pull/([0-9]+)/head|#([0-9]+))(?:@(?:[0-9a-f]{40}|[0-9a-f]{64}))?)$"
)
MAX_PATCHES = 64
MAX_PATCH_REF_LENGTH = 100  # the longest valid shape is "refs/pull/2147483647/head@" and a 64-digit sha

MAX_INT32 = 2**31 - 1  # PostgreSQL INTEGER: PR numbers, counts
# The largest id a path or query accepts. Ids are BIGINT, but no deployment nears 2**31 rows; one
# bound every integer column and every backend holds means an id beyond it answers "no such thing"
# instead of overflowing a driver (SQLite's 64-bit binding, a 32-bit column, ...).
MAX_ID = MAX_INT32

# How deep a JSON value (``environment``, ``perf_dump``, a whole body) may nest. Real ones nest a
# few levels; deeper input is refused before any recursive code (pydantic, the NUL scrubber, the
# JSON column serialiser, the digest) walks it, so it can never raise RecursionError.
MAX_JSON_DEPTH = 32

# Times a result or commit may carry: anything outside is a typo or hostile, and a year-1 or
# year-9999 time with an offset cannot even be converted to UTC.
EARLIEST_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(2100, 12, 31, 23, 59, 59, tzinfo=dt.UTC)

# Measurements are JSON numbers only (ints welcome): strict, so ``true`` or ``"12"`` is refused
# rather than read as 1.0 or 12.0. At least a nanosecond: detection takes logs of ratios, which a
# subnormal (5e-324) turns into log(0).
PositiveMs = Annotated[float, Strict(), Field(ge=1e-6, allow_inf_nan=False, le=1e9)]
NonNegativeMs = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False, le=1e10)]
Count = Annotated[int, Strict(), Field(ge=0, le=10_000_000)]


def _sha(value: str) -> str:
    value = value.strip().lower()
    if not SHA_PATTERN.match(value):
        raise ValueError("must be a git commit sha: 7 to 40 hexadecimal digits")
    return value


def _aware(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        raise ValueError("must include a timezone offset, e.g. 2026-03-01T12:00:00Z")
    # Compared before converting: astimezone() overflows for year 1 or 9999 with an offset.
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise ValueError(f"must be between {EARLIEST_TIME:%Y-%m-%d} and {LATEST_TIME:%Y-%m-%d} (UTC)")
    return value.astimezone(dt.UTC)


def _pull_number(match: re.Match[str]) -> int | None:
    number = match[1] or match[2]
    return int(number) if number is not None else None


def _patch_ref(ref: str) -> str:
    match = PATCH_REF_PATTERN.fullmatch(ref)
    if match is None:
        raise ValueError(
            "must be a commit sha (7 to 40, or 64, hexadecimal digits) "
            "or a pull request (#N or refs/pull/N/head, optionally @SHA)"
        )
    number = _pull_number(match)
    if number is not None and not 1 <= number <= MAX_INT32:
        raise ValueError(f"pull request number {number} is not between 1 and {MAX_INT32}")
    return ref


def _distinct_patches(refs: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    for index, ref in enumerate(refs):
        match = PATCH_REF_PATTERN.fullmatch(ref)
        number = _pull_number(match) if match is not None else None
        key = f"#{number}" if number is not None else ref  # "#12" is "refs/pull/12/head"
        if key in seen:
            raise ValueError(f"[{index}] {ref!r} repeats [{seen[key]}]; each patch is stacked once")
        seen[key] = index
    return refs


Sha = Annotated[str, AfterValidator(_sha)]
AwareDatetime = Annotated[dt.datetime, AfterValidator(_aware)]
PatchRef = Annotated[str, Field(max_length=MAX_PATCH_REF_LENGTH), AfterValidator(_patch_ref)]
PatchRefs = Annotated[
    list[PatchRef],
    Field(
        max_length=MAX_PATCHES,
        description="refs stacked on the commit, in order: shas, #N or refs/pull/N/head",
    ),
    AfterValidator(_distinct_patches),
]


def json_too_deep(value: Any, *, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Where ``value`` nests lists and dicts more than ``limit`` deep (``"environment"``), else None.

    Iterative on purpose: a 100,000-level value must not raise RecursionError while being measured.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        if depth > limit:
            return where or "body"
        for key, child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1, where or str(key)[:64]))
    return None


def reject_deep_json(data: Any) -> None:
    """Raise ``ValueError`` naming the top-level field when ``data`` nests over :data:`MAX_JSON_DEPTH`."""
    field = json_too_deep(data)
    if field is not None:
        raise ValueError(f"{field}: nested more than {MAX_JSON_DEPTH} levels deep")


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nul_characters(cls, data: Any) -> Any:
        """PostgreSQL's text and JSONB cannot hold U+0000: it becomes U+FFFD, as the runner's log reader does.

        Too-deep input is refused first, before the recursive scrub (or anything else) walks it.
        """
        reject_deep_json(data)
        return _without_nul(data)


class CommitIn(_In):
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


class StageIn(_In):
    """One pipeline stage time."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    duration_ms: NonNegativeMs


class CompileCounters(_In):
    """torch.compile / Dynamo counters of the run, when known."""

    graph_breaks: Count | None = None
    recompiles: Count | None = None
    unique_graphs: Count | None = None
    frames_compiled: Count | None = None


class MeasurementIn(_In):
    """What a run measured (or why it failed): the part shared by imports and job uploads.

    A successful result needs per-step times or the log's reported average step time; the value
    of record is the median of the step times when they are known, else that average.
    """

    status: Literal["ok", "failed"] = "ok"
    failure_reason: Annotated[str, Field(max_length=4000)] | None = None
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
    environment: dict[str, Any] = Field(default_factory=dict)
    command: Annotated[str, Field(max_length=20_000)] = ""
    raw_log: str = ""
    log_truncated: bool = False
    perf_dump: dict[str, Any] | None = None
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

    def digest(self) -> str:
        """SHA-256 of the canonical payload (without the idempotency key)."""
        canonical = json.dumps(
            self.model_dump(mode="json", exclude={"idempotency_key"}), sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


class ResultIn(MeasurementIn):
    """One benchmark result made outside a job (an import), as ``POST /api/v1/results`` takes it."""

    case: Annotated[str, Field(min_length=1, max_length=128, description="case slug")]
    hardware: Annotated[str, Field(min_length=1, max_length=64)]
    commit: CommitIn
    patches: PatchRefs = Field(default_factory=list)
    idempotency_key: (
        Annotated[str, Field(min_length=8, max_length=128, pattern=r"^[A-Za-z0-9_.:\-]+$")] | None
    ) = None


class BuildInfo(_In):
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


_NAMES_ITS_FIELD = re.compile(r"^[a-z_][a-z0-9_\[\].]*: ")


def describe_errors(problems: Sequence[Mapping[str, Any]]) -> str:
    """One readable clause per problem, each naming its field (``step_times_ms[3]: ...``)."""
    lines = []
    for problem in problems:
        field = ""
        for part in problem.get("loc", ()):
            if part in ("body", "query", "path"):
                continue
            field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
        message = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
        # A model-level check already starts with the field it is about.
        lines.append(message if _NAMES_ITS_FIELD.match(message) else f"{field or 'body'}: {message}")
    return "; ".join(lines) or "invalid input"


def validation_message(error: ValidationError) -> str:
    """:func:`describe_errors` for a pydantic ``ValidationError``."""
    return describe_errors(error.errors(include_url=False))
