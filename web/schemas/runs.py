"""One run as the JSON API shows it: its numbers, steps, stages, patches and the conditions it was
measured under, read off the ORM (stages and artifacts loaded)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import AliasPath, BaseModel, ConfigDict, Field, field_validator

from tracker.ingest.conditions import RunConditions, conditions_from_environment
from tracker.models import Run, RunOutput
from web.schemas.commits import CommitOut


class StageOut(BaseModel):
    """One stage time."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    duration_ms: float


class PatchOut(BaseModel):
    """A patch of a candidate."""

    model_config = ConfigDict(from_attributes=True)

    position: int
    kind: str
    ref: str
    pr_number: int | None


class CpuConditionsOut(BaseModel):
    """What the whole CPU did while the benchmark ran; cores are CPU-seconds per second."""

    model_config = ConfigDict(from_attributes=True)

    cpu_count: int
    other_cores: float
    other_share_pct: float
    steal_pct: float | None
    benchmark_cores: float | None
    loadavg_before: list[float]
    loadavg_after: list[float]
    window_s: float | None

    @field_validator("other_share_pct")
    @classmethod
    def _one_decimal(cls, value: float) -> float:
        """The share to one decimal."""
        return round(value, 1)


class GpuSnapshotOut(BaseModel):
    """One GPU before or after the run."""

    model_config = ConfigDict(from_attributes=True)

    when: str
    index: int | None
    sm_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    temperature_c: float | None
    throttle_reasons: list[str]
    throttling: list[str]


class ConditionsOut(BaseModel):
    """The conditions a run was measured under (what the runner recorded) and the probes that failed."""

    model_config = ConfigDict(from_attributes=True)

    cpu: CpuConditionsOut | None
    gpus: list[GpuSnapshotOut]
    errors: list[str]


class OutputReferenceOut(BaseModel):
    """One reference PNG of a run's output (the thumbnail), served at ``url``."""

    position: int
    frame_index: int = Field(description="the output's frame it shows (0 for an image)")
    width: int
    height: int
    url: str


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
            references=[
                OutputReferenceOut(
                    position=frame.position,
                    frame_index=frame.frame_index,
                    width=frame.width,
                    height=frame.height,
                    url=f"/api/v1/runs/{output.run_id}/output/{frame.position}.png",
                )
                for frame in output.frames
            ],
        )


class RunOut(BaseModel):
    """One run with its per-step times and stages (the log is at ``log_url``).

    ``excluded_reason`` says why detection leaves the run out; ``measurement_flag`` is set when that
    is its measuring conditions (``contention``, ``gpu_throttled``, ``cpu_steal``), and
    ``rerun_job_id`` names the job queued to measure it again.
    """

    model_config = ConfigDict(from_attributes=True)

    id: int
    status: str
    failure_reason: str | None
    source: str
    case: str = Field(validation_alias=AliasPath("case", "slug"))
    case_version: int = Field(validation_alias=AliasPath("case", "version"))
    hardware: str = Field(validation_alias=AliasPath("hardware_kind", "name"))
    commit: CommitOut
    candidate_label: str = Field(validation_alias=AliasPath("candidate", "label"))
    patches: list[PatchOut] = Field(validation_alias=AliasPath("candidate", "patches"))
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
    patches_applied: list[str] = Field(validation_alias=AliasPath("artifacts", "patches_applied"))
    patches_already_in: list[str] = Field(validation_alias=AliasPath("artifacts", "patches_already_in"))
    tree_sha: str | None = Field(validation_alias=AliasPath("artifacts", "tree_sha"))
    job_id: int | None
    attempt: int | None
    step_times_ms: list[float] = Field(validation_alias=AliasPath("artifacts", "step_times_ms"))
    stages: list[StageOut]
    warnings: list[str]
    sources: list[str]
    environment: dict[str, Any] = Field(validation_alias=AliasPath("artifacts", "environment"))
    command: str = Field(validation_alias=AliasPath("artifacts", "command"))
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
        """From the ORM object, with stages and artifacts loaded; the values the API derives (the
        compile counters in one mapping, the log's URL, the recorded conditions) come from
        :class:`_RunAsShown`."""
        shown = cls.model_validate(_RunAsShown(run))
        return shown.model_copy(update={"output": OutputOut.of(output) if output is not None else None})


class _RunAsShown:
    """A run's attributes, and those :class:`RunOut` derives from them."""

    def __init__(self, run: Run) -> None:
        self._run = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)

    @property
    def compile(self) -> dict[str, int | None]:
        """What ``torch.compile`` did: graph breaks, recompiles, graphs and frames."""
        run = self._run
        return {
            "graph_breaks": run.graph_breaks,
            "recompiles": run.recompiles,
            "unique_graphs": run.unique_graphs,
            "frames_compiled": run.frames_compiled,
        }

    @property
    def log_url(self) -> str:
        """Where the run's log is served."""
        return f"/api/v1/runs/{self._run.id}/log"

    @property
    def conditions(self) -> RunConditions | None:
        """The conditions the environment records, if it records any (or a probe that failed)."""
        conditions = conditions_from_environment(self._run.artifacts.environment)
        return conditions if conditions.recorded or conditions.errors else None
