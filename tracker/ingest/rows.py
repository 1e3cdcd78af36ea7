"""The rows a stored upload becomes: ``runs``, ``run_stages``, ``run_artifacts`` (and its output), built once.

One builder serves both ways of writing them: a single upload turns the rows into ORM objects
(:meth:`RunRows.as_run`), a batch inserts them with multi-row Core statements
(:mod:`tracker.ingest.batch`); either way every column holds the same value. Logs, commands,
warnings, perf dumps and failure reasons are redacted here, before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracker.access.redaction import Redactor
from tracker.enums import RunSource, RunStatus
from tracker.ingest.conditions import condition_flag
from tracker.ingest.provenance import dump_commit_warning
from tracker.models import Run, RunArtifacts, RunStage
from tracker.outputs.storing import frame_rows
from tracker.statistics.steps import summarize_steps, value_of_record
from wire import JobResultIn, MeasurementIn, OutputIn


@dataclass(frozen=True)
class RunRows:
    """Column values of one run, its stages (in order) and its artifacts; no ids yet.

    Every run (and artifacts) row has the same keys, whatever the upload: a batch inserts them
    with one multi-row statement.
    """

    run: dict[str, Any]
    stages: list[dict[str, Any]]
    artifacts: dict[str, Any]
    output: OutputIn | None = None  # its references checked to decode (tracker.outputs.storing)

    def as_run(self) -> Run:
        """The rows as a new ORM run with its stages and artifacts (ids come at flush)."""
        return Run(
            **self.run,
            stages=[RunStage(**stage) for stage in self.stages],
            artifacts=RunArtifacts(**self.artifacts),
        )


def run_rows(
    result: MeasurementIn,
    *,
    key: str,
    digest: str,
    source: RunSource,
    cpu_contention: bool = True,
    redactor: Redactor | None = None,
) -> RunRows:
    """What storing ``result`` under idempotency ``key`` writes (case, commit and job ids apart).

    Its free text goes through ``redactor`` (``IngestLimits.redactor``, holding the settings'
    secrets; ``None``: token shapes and secret-named values only).
    """
    redact = redactor or Redactor()
    status = RunStatus(result.status)
    run: dict[str, Any] = {
        "idempotency_key": key,
        "payload_digest": digest,
        "source": source,
        "status": status,
        "failure_reason": None if result.failure_reason is None else redact.text(result.failure_reason),
        "denoise_stage_ms": result.denoise_stage_ms,
        "e2e_ms": result.e2e_ms,
        "peak_memory_mb": result.peak_memory_mb,
        "graph_breaks": result.compile.graph_breaks,
        "recompiles": result.compile.recompiles,
        "unique_graphs": result.compile.unique_graphs,
        "frames_compiled": result.compile.frames_compiled,
        "requests_seen": result.requests_seen,
        "warmup_requests": result.warmup_requests,
        "warnings": [redact.text(warning) for warning in _warnings(result)],
        "sources": list(result.sources),
        "measured_at": result.measured_at,
        **_step_summary(result),
    }
    # Measured beside a CPU hog or on a throttled GPU: stored, but flagged and left out of detection.
    flag = condition_flag(status=status, environment=result.environment, cpu_contention=cpu_contention)
    run["measurement_flag"] = None if flag is None else flag.kind
    run["excluded_reason"] = None if flag is None else flag.reason
    stages = [
        {"position": position, "name": stage.name, "duration_ms": stage.duration_ms}
        for position, stage in enumerate(result.stages)
    ]
    artifacts = _artifacts(result, redact)
    if result.output is not None:
        frame_rows(0, result.output)  # a reference that does not decode: InvalidInput naming it, now
    return RunRows(run=run, stages=stages, artifacts=artifacts, output=result.output)


def _artifacts(result: MeasurementIn, redact: Redactor) -> dict[str, Any]:
    """The run's artifacts row: logs and commands are served to every reader, so they are redacted."""
    build = result.build if isinstance(result, JobResultIn) else None
    return {
        "step_times_ms": list(result.step_times_ms),
        "environment": redact.mapping(result.environment),
        "command": redact.text(result.command),
        "raw_log": redact.text(result.raw_log),
        "log_truncated": result.log_truncated,
        "perf_dump": None if result.perf_dump is None else redact.mapping(result.perf_dump),
        "patches_applied": list(build.patches_applied) if build else [],
        "patches_already_in": list(build.patches_already_in) if build else [],
        "tree_sha": build.tree_sha if build else None,
        "output_digest": result.output_digest if isinstance(result, JobResultIn) else None,
    }


def _warnings(result: MeasurementIn) -> list[str]:
    """The upload's warnings, and the tracker's own about it."""
    mismatch = dump_commit_warning(result)
    return [*result.warnings, *([mismatch] if mismatch else [])]


_STEP_COLUMNS = dict.fromkeys(
    (
        "denoise_step_ms",
        "denoise_step_basis",
        "denoise_step_count",
        "denoise_step_median_ms",
        "denoise_step_mean_ms",
        "denoise_step_first_ms",
        "denoise_step_steady_ms",
        "denoise_step_iqr_ms",
    )
)


def _step_summary(result: MeasurementIn) -> dict[str, Any]:
    """The step columns (every one, so a batch's rows share their keys): a successful run's step
    times summarised, else the log's average; ``None`` for a failed run."""
    if result.status != "ok":
        return dict(_STEP_COLUMNS)
    if result.step_times_ms:
        summary = summarize_steps(result.step_times_ms)
        clock = (result.perf_dump or {}).get("denoise_step_clock")
        value, basis = value_of_record(summary, step_clock=clock if isinstance(clock, str) else None)
        return {
            "denoise_step_ms": value,
            "denoise_step_basis": basis,
            "denoise_step_count": summary.count,
            "denoise_step_median_ms": summary.median_ms,
            "denoise_step_mean_ms": summary.mean_ms,
            "denoise_step_first_ms": summary.first_ms,
            "denoise_step_steady_ms": summary.steady_ms,
            "denoise_step_iqr_ms": summary.iqr_ms,
        }
    # Only the log's average is known: it is the value of record, and the run says so.
    return _STEP_COLUMNS | {
        "denoise_step_ms": result.denoise_step_mean_ms,
        "denoise_step_basis": "mean",
        "denoise_step_count": result.denoise_step_count,
        "denoise_step_mean_ms": result.denoise_step_mean_ms,
    }
