"""One run as the JSON API shows it: its numbers, steps, stages, patches and the conditions it was
measured under, read off the ORM (stages and artifacts loaded)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field

from tracker.ingest.conditions import (
    CpuConditions,
    GpuSnapshot,
    RunConditions,
    conditions_from_environment,
)
from tracker.models import CandidatePatch, Run, RunOutput, RunOutputFrame, RunStage
from web.schemas.commits import CommitOut


class StageOut(BaseModel):
    """One stage time."""

    name: str
    duration_ms: float

    @classmethod
    def of(cls, stage: RunStage) -> StageOut:
        """From the ORM object."""
        return cls(name=stage.name, duration_ms=stage.duration_ms)


class PatchOut(BaseModel):
    """A patch of a candidate."""

    position: int
    kind: str
    ref: str
    pr_number: int | None

    @classmethod
    def of(cls, patch: CandidatePatch) -> PatchOut:
        """From the ORM object."""
        return cls(position=patch.position, kind=patch.kind.value, ref=patch.ref, pr_number=patch.pr_number)


class CpuConditionsOut(BaseModel):
    """What the whole CPU did while the benchmark ran; cores are CPU-seconds per second."""

    cpu_count: int
    other_cores: float
    other_share_pct: float
    steal_pct: float | None
    benchmark_cores: float | None
    loadavg_before: list[float]
    loadavg_after: list[float]
    window_s: float | None

    @classmethod
    def of(cls, cpu: CpuConditions) -> CpuConditionsOut:
        """From what the runner recorded; the share to one decimal."""
        return cls(
            cpu_count=cpu.cpu_count,
            other_cores=cpu.other_cores,
            other_share_pct=round(cpu.other_share_pct, 1),
            steal_pct=cpu.steal_pct,
            benchmark_cores=cpu.benchmark_cores,
            loadavg_before=list(cpu.loadavg_before),
            loadavg_after=list(cpu.loadavg_after),
            window_s=cpu.window_s,
        )


class GpuSnapshotOut(BaseModel):
    """One GPU before or after the run."""

    when: str
    index: int | None
    sm_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    temperature_c: float | None
    throttle_reasons: list[str]
    throttling: list[str]

    @classmethod
    def of(cls, gpu: GpuSnapshot) -> GpuSnapshotOut:
        """From what the runner recorded."""
        return cls(
            when=gpu.when,
            index=gpu.index,
            sm_clock_mhz=gpu.sm_clock_mhz,
            max_sm_clock_mhz=gpu.max_sm_clock_mhz,
            temperature_c=gpu.temperature_c,
            throttle_reasons=list(gpu.throttle_reasons),
            throttling=list(gpu.throttling),
        )


class ConditionsOut(BaseModel):
    """The conditions a run was measured under (what the runner recorded) and the probes that failed."""

    cpu: CpuConditionsOut | None
    gpus: list[GpuSnapshotOut]
    errors: list[str]

    @classmethod
    def of(cls, conditions: RunConditions) -> ConditionsOut:
        """From what the runner recorded."""
        return cls(
            cpu=CpuConditionsOut.of(conditions.cpu) if conditions.cpu is not None else None,
            gpus=[GpuSnapshotOut.of(gpu) for gpu in conditions.gpus],
            errors=list(conditions.errors),
        )


class OutputReferenceOut(BaseModel):
    """One reference PNG of a run's output (the thumbnail), served at ``url``."""

    position: int
    frame_index: int = Field(description="the output's frame it shows (0 for an image)")
    width: int
    height: int
    url: str

    @classmethod
    def of(cls, frame: RunOutputFrame) -> OutputReferenceOut:
        """From the stored frame; its PNG is served by ``GET /api/v1/runs/{id}/output/{position}.png``."""
        return cls(
            position=frame.position,
            frame_index=frame.frame_index,
            width=frame.width,
            height=frame.height,
            url=f"/api/v1/runs/{frame.run_id}/output/{frame.position}.png",
        )


class OutputOut(BaseModel):
    """The seeded output a run saved: the digest of its decoded pixels, its shape, its references."""

    digest: str
    media: str
    width: int
    height: int
    frame_count: int
    file_name: str
    references: list[OutputReferenceOut]

    @classmethod
    def of(cls, output: RunOutput) -> OutputOut:
        """From the stored row and its frames."""
        return cls(
            digest=output.digest,
            media=output.media,
            width=output.width,
            height=output.height,
            frame_count=output.frame_count,
            file_name=output.file_name,
            references=[OutputReferenceOut.of(frame) for frame in output.frames],
        )


class RunOut(BaseModel):
    """One run with its per-step times and stages (the log is at ``log_url``).

    ``excluded_reason`` says why detection leaves the run out; ``measurement_flag`` is set when that
    is its measuring conditions (``contention``, ``gpu_throttled``, ``cpu_steal``), and
    ``rerun_job_id`` names the job queued to measure it again.
    """

    id: int
    status: str
    failure_reason: str | None
    source: str
    case: str
    case_version: int
    hardware: str
    commit: CommitOut
    candidate_label: str
    patches: list[PatchOut]
    denoise_step_ms: float | None
    denoise_step_basis: str | None
    denoise_step_count: int | None
    denoise_step_mean_ms: float | None
    denoise_step_median_ms: float | None
    denoise_step_first_ms: float | None
    denoise_step_steady_ms: float | None
    denoise_stage_ms: float | None
    e2e_ms: float | None
    peak_memory_mb: float | None
    compile: dict[str, int | None]
    patches_applied: list[str]
    patches_already_in: list[str]
    tree_sha: str | None
    job_id: int | None
    attempt: int | None
    step_times_ms: list[float]
    stages: list[StageOut]
    warnings: list[str]
    sources: list[str]
    environment: dict[str, Any]
    command: str
    requests_seen: int
    warmup_requests: int
    measured_at: dt.datetime | None
    created_at: dt.datetime
    log_url: str
    excluded_reason: str | None = None
    measurement_flag: str | None = None
    rerun_job_id: int | None = None
    conditions: ConditionsOut | None = None
    output: OutputOut | None = Field(default=None, description="what the run saved with --save-output")

    @classmethod
    def of(cls, run: Run, output: RunOutput | None = None) -> RunOut:
        """From the ORM object, with stages and artifacts loaded; the compile counters in one mapping,
        the log's URL and the conditions the environment records (or a probe that failed) derived."""
        artifacts = run.artifacts
        conditions = conditions_from_environment(artifacts.environment)
        has_conditions = conditions.recorded or bool(conditions.errors)
        return cls(
            id=run.id,
            status=run.status.value,
            failure_reason=run.failure_reason,
            source=run.source.value,
            case=run.case.slug,
            case_version=run.case.version,
            hardware=run.hardware_kind.name,
            commit=CommitOut.of(run.commit),
            candidate_label=run.candidate.label,
            patches=[PatchOut.of(patch) for patch in run.candidate.patches],
            denoise_step_ms=run.denoise_step_ms,
            denoise_step_basis=run.denoise_step_basis,
            denoise_step_count=run.denoise_step_count,
            denoise_step_mean_ms=run.denoise_step_mean_ms,
            denoise_step_median_ms=run.denoise_step_median_ms,
            denoise_step_first_ms=run.denoise_step_first_ms,
            denoise_step_steady_ms=run.denoise_step_steady_ms,
            denoise_stage_ms=run.denoise_stage_ms,
            e2e_ms=run.e2e_ms,
            peak_memory_mb=run.peak_memory_mb,
            compile={
                "graph_breaks": run.graph_breaks,
                "recompiles": run.recompiles,
                "unique_graphs": run.unique_graphs,
                "frames_compiled": run.frames_compiled,
            },
            patches_applied=artifacts.patches_applied,
            patches_already_in=artifacts.patches_already_in,
            tree_sha=artifacts.tree_sha,
            job_id=run.job_id,
            attempt=run.attempt,
            step_times_ms=artifacts.step_times_ms,
            stages=[StageOut.of(stage) for stage in run.stages],
            warnings=run.warnings,
            sources=run.sources,
            environment=artifacts.environment,
            command=artifacts.command,
            requests_seen=run.requests_seen,
            warmup_requests=run.warmup_requests,
            measured_at=run.measured_at,
            created_at=run.created_at,
            log_url=f"/api/v1/runs/{run.id}/log",
            excluded_reason=run.excluded_reason,
            measurement_flag=run.measurement_flag.value if run.measurement_flag is not None else None,
            rerun_job_id=run.rerun_job_id,
            conditions=ConditionsOut.of(conditions) if has_conditions else None,
            output=OutputOut.of(output) if output is not None else None,
        )
