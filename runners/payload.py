"""Build upload bodies from a parsed run by constructing the wire format's classes.

A job attempt's result is a :class:`wire.JobResultIn`, an import (``perftrack import-log``) a
:class:`wire.ResultIn`; a body the tracker would refuse fails here already, with the message naming the
field the tracker would give (``pydantic.ValidationError``). :func:`as_body` turns one into the JSON
the tracker takes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from runners.parsing import ParsedRun, RunStatus
from wire import MAX_FAILURE_REASON, JobResultIn, MeasurementIn, ResultIn
from wire.files import FileIn, MediaType

if TYPE_CHECKING:  # only read here: ``import-log`` needs neither the builder nor the workloads
    from runners.candidates import BuiltCandidate
    from runners.workloads.base import WorkloadResult

_MAX_WARNINGS = 200  # what wire.MeasurementIn.warnings holds at most


@dataclass(frozen=True)
class CommitInfo:
    """What is known of the measured commit."""

    sha: str
    committed_at: str | None = None  # ISO 8601 with offset
    title: str = ""
    author_name: str = ""
    author_email: str = ""
    branch: str | None = None
    parents: list[str] = field(default_factory=list)


def import_key(
    *, case: str, hardware: str, commit_sha: str, patches: list[str], log_text: str, dump_text: str
) -> str:
    """Idempotency key of an import: the same log for the same case, hardware and candidate is one run."""
    digest = hashlib.sha256()
    for part in (case, hardware.lower(), commit_sha.lower(), *patches, log_text, "\x00", dump_text):
        digest.update(part.encode("utf-8", "replace"))
        digest.update(b"\x1f")
    return "import:" + digest.hexdigest()[:48]


def as_body(upload: MeasurementIn) -> dict[str, Any]:
    """The JSON body of an upload; fields that are ``None`` are left out (absent reads as ``None``)."""
    return upload.model_dump(mode="json", exclude_none=True)


def _measurement(
    parsed: ParsedRun,
    *,
    raw_log: str,
    perf_dump: dict[str, Any] | None,
    command: str,
    environment: dict[str, Any] | None,
) -> dict[str, Any]:
    """The measurement fields of an upload; numbers the parser could not establish stay ``None``."""
    failed = parsed.status is RunStatus.FAILED
    reason = (parsed.failure_reason or "the run failed for an unknown reason")[:MAX_FAILURE_REASON]
    return {
        "status": parsed.status.value,
        "failure_reason": reason if failed else None,
        "step_times_ms": list(parsed.step_times_ms),
        "denoise_step_count": parsed.denoise_step_count,
        "denoise_step_mean_ms": parsed.denoise_step_mean_ms,
        **_stage_and_request_fields(parsed),
        "raw_log": raw_log,
        "command": command,
        "environment": dict(environment or {}),
        "perf_dump": perf_dump,
    }


def _stage_and_request_fields(parsed: ParsedRun) -> dict[str, Any]:
    """The parsed run's stages, request figures, warnings and sources (uploads and ``parse-log`` alike)."""
    return {
        "denoise_stage_ms": parsed.denoise_stage_ms,
        "stages": [{"name": stage.name, "duration_ms": stage.duration_ms} for stage in parsed.stages],
        "e2e_ms": parsed.e2e_ms,
        "peak_memory_mb": parsed.peak_memory_mb,
        "requests_seen": parsed.requests_seen,
        "warmup_requests": parsed.warmup_requests,
        "warnings": list(parsed.warnings),
        "sources": list(parsed.sources),
    }


def _commit(commit: CommitInfo) -> dict[str, Any]:
    """The ``commit`` object of an upload, validated with the rest (so its errors read ``commit.sha``)."""
    fields = asdict(commit)
    fields["committed_at"] = commit.committed_at or None
    fields["branch"] = commit.branch or None
    return fields


def job_result(
    parsed: ParsedRun,
    *,
    attempt: int,
    workload: WorkloadResult | None = None,
    built: BuiltCandidate | None = None,
    commit: CommitInfo | None = None,
    raw_log: str | None = None,
) -> JobResultIn:
    """A runner's upload for one attempt of a job: what ``workload`` measured, how ``built`` was made.

    ``raw_log`` defaults to the workload's log; a failure before any workload ran passes its own.
    """
    measurement = _measurement(
        parsed,
        raw_log=raw_log if raw_log is not None else (workload.log_text if workload else ""),
        perf_dump=_json_object(workload.perf_dump_text) if workload else None,
        command=workload.command if workload else "",
        environment=workload.environment if workload else None,
    )
    extra: dict[str, Any] = {}
    if workload is not None:
        extra["log_truncated"] = workload.log_truncated
        extra["compile"] = asdict(workload.compile)
        extra["request_latencies_ms"] = [value for value in workload.request_latencies_ms if value > 0]
        extra["output"] = workload.output
        measurement["warnings"] = [*measurement["warnings"], *workload.warnings][:_MAX_WARNINGS]
        extra["files"] = [
            FileIn.of_bytes(item.name, item.content, media_type=_media_type(item.media_type))
            for item in workload.files
        ]
    if built is not None:
        extra["build"] = {
            "head_sha": built.head_sha,
            "tree_sha": built.tree_sha,
            "patches_applied": list(built.patches_applied),
            "patches_already_in": list(built.patches_already_in),
            "build_reused": built.build_reused,
        }
    if commit is not None:
        extra["commit"] = _commit(commit)
    return JobResultIn(attempt=attempt, **measurement, **extra)


def _media_type(media_type: str) -> MediaType:
    """The wire's name of a captured file's media type (gzip unless it is JSON or text)."""
    if media_type == "application/json":
        return "application/json"
    if media_type == "text/plain":
        return "text/plain"
    return "application/gzip"


def import_result(
    parsed: ParsedRun,
    *,
    case: str,
    hardware: str,
    commit: CommitInfo,
    idempotency_key: str,
    patches: list[str] | None = None,
    raw_log: str = "",
    perf_dump: dict[str, Any] | None = None,
    command: str = "",
    environment: dict[str, Any] | None = None,
) -> ResultIn:
    """An import made outside any job, as ``POST /api/v1/results`` takes it.

    Its JSON body (what ``perftrack import-log --server`` posts) is :func:`as_body` of it.
    """
    measurement = _measurement(
        parsed, raw_log=raw_log, perf_dump=perf_dump, command=command, environment=environment
    )
    return ResultIn(
        case=case,
        hardware=hardware,
        commit=_commit(commit),
        patches=list(patches or []),
        idempotency_key=idempotency_key,
        **measurement,
    )


def _json_object(text: str | None) -> dict[str, Any] | None:
    """A perf dump's JSON object; ``None`` when there is none or it is not an object."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parsed_as_json(parsed: ParsedRun) -> str:
    """What ``perftrack parse-log`` prints: every stored field of the parsed run."""
    document = {
        "status": parsed.status.value,
        "failure_reason": parsed.failure_reason,
        "denoise_step_count": parsed.denoise_step_count,
        "denoise_step_ms": parsed.denoise_step_ms,
        "denoise_step_basis": parsed.denoise_step_basis,
        "denoise_step_mean_ms": parsed.denoise_step_mean_ms,
        "denoise_step_median_ms": parsed.denoise_step_median_ms,
        "step_times_ms": list(parsed.step_times_ms),
        **_stage_and_request_fields(parsed),
        # Every request the log shows, with the one stored and why (parse-log only; not uploaded).
        "requests": [asdict(request) for request in parsed.requests],
    }
    return json.dumps(document, indent=2)
