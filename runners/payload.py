"""Turn a parsed run into the JSON body of ``POST /api/v1/results``.

Used by ``perftrack import-log`` and by the runner agent, so both upload the same shape.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from runners.parsing import ParsedRun, RunStatus


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


def measurement_body(
    parsed: ParsedRun,
    *,
    raw_log: str = "",
    perf_dump: dict[str, Any] | None = None,
    command: str = "",
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The measurement part of an upload; numbers the parser could not establish are left out."""
    body: dict[str, Any] = {
        "status": parsed.status.value,
        "step_times_ms": list(parsed.step_times_ms),
        "stages": [{"name": stage.name, "duration_ms": stage.duration_ms} for stage in parsed.stages],
        "requests_seen": parsed.requests_seen,
        "warmup_requests": parsed.warmup_requests,
        "warnings": list(parsed.warnings),
        "sources": list(parsed.sources),
        "raw_log": raw_log,
        "command": command,
        "environment": dict(environment or {}),
        "perf_dump": perf_dump,
    }
    if parsed.status is RunStatus.FAILED:
        body["failure_reason"] = parsed.failure_reason or "the run failed for an unknown reason"
    optional = {
        "denoise_step_count": parsed.denoise_step_count,
        "denoise_step_mean_ms": parsed.denoise_step_mean_ms,
        "denoise_stage_ms": parsed.denoise_stage_ms,
        "e2e_ms": parsed.e2e_ms,
        "peak_memory_mb": parsed.peak_memory_mb,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    return body


def commit_body(commit: CommitInfo) -> dict[str, Any]:
    """The ``commit`` object of an upload."""
    body: dict[str, Any] = {
        "sha": commit.sha,
        "title": commit.title,
        "author_name": commit.author_name,
        "author_email": commit.author_email,
        "parents": list(commit.parents),
    }
    if commit.committed_at:
        body["committed_at"] = commit.committed_at
    if commit.branch:
        body["branch"] = commit.branch
    return body


def result_payload(
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
) -> dict[str, Any]:
    """The body of ``POST /api/v1/results`` (an import made outside any job)."""
    body = measurement_body(
        parsed, raw_log=raw_log, perf_dump=perf_dump, command=command, environment=environment
    )
    body.update(
        {
            "case": case,
            "hardware": hardware,
            "commit": commit_body(commit),
            "patches": list(patches or []),
            "idempotency_key": idempotency_key,
        }
    )
    return body


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
        "denoise_stage_ms": parsed.denoise_stage_ms,
        "stages": [{"name": stage.name, "duration_ms": stage.duration_ms} for stage in parsed.stages],
        "e2e_ms": parsed.e2e_ms,
        "peak_memory_mb": parsed.peak_memory_mb,
        "requests_seen": parsed.requests_seen,
        "warmup_requests": parsed.warmup_requests,
        "warnings": list(parsed.warnings),
        "sources": list(parsed.sources),
    }
    return json.dumps(document, indent=2)
