"""Response shapes of the JSON API (the runner protocol's, requests and answers, live in :mod:`wire`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel

from tracker.ingest.conditions import RunConditions, conditions_from_environment
from tracker.models import Case, Commit, HardwareKind, Run
from tracker.views.queries import Series
from tracker.views.series_chart import ChartCommit, SeriesChart


class HardwareOut(BaseModel):
    """A hardware kind."""

    name: str
    description: str


class CaseHardwareOut(BaseModel):
    """A hardware kind a case runs on, with the threshold that applies there."""

    name: str
    threshold_pct: float


class CaseOut(BaseModel):
    """The current version of a benchmark case."""

    slug: str
    version: int
    suite: str
    title: str
    model: str
    family: str
    task: str
    workload: str
    mode: str
    num_gpus: int
    requests: int
    threshold_pct: float
    hardware: list[CaseHardwareOut]
    params: dict[str, Any]
    flags: dict[str, Any]

    @classmethod
    def of(cls, case: Case) -> CaseOut:
        """From the ORM object."""
        return cls(
            slug=case.slug,
            version=case.version,
            suite=case.suite,
            title=case.title,
            model=case.model,
            family=case.model_family,
            task=case.task,
            workload=str(case.workload),
            mode=str(case.mode),
            num_gpus=case.num_gpus,
            requests=case.requests,
            threshold_pct=case.threshold_pct,
            hardware=[
                CaseHardwareOut(name=name, threshold_pct=case.threshold_for(name))
                for name in case.hardware_names
            ],
            params=dict(case.params),
            flags=dict(case.flags),
        )


class CommitOut(BaseModel):
    """A commit as series and runs show it."""

    sha: str
    title: str
    author: str
    committed_at: dt.datetime
    committed_at_estimated: bool

    @classmethod
    def of(cls, commit: Commit) -> CommitOut:
        """From the ORM object."""
        return cls(
            sha=commit.sha,
            title=commit.title,
            author=commit.author_name,
            committed_at=commit.committed_at,
            committed_at_estimated=commit.committed_at_estimated,
        )


class SeriesPointOut(BaseModel):
    """One run in a series."""

    run_id: int
    status: str
    value: float | None
    basis: str | None
    change_pct: float | None
    failure_reason: str | None
    commit: CommitOut


class SeriesOut(BaseModel):
    """A case × hardware × metric series, runs in commit order (oldest first)."""

    case: str
    case_version: int
    hardware: str
    metric: str
    unit: str
    threshold_pct: float
    total_runs: int
    points: list[SeriesPointOut]

    @classmethod
    def of(cls, series: Series) -> SeriesOut:
        """From the read model."""
        return cls(
            case=series.case.slug,
            case_version=series.case.version,
            hardware=series.hardware,
            metric=str(series.metric),
            unit=series.unit,
            threshold_pct=series.threshold_pct,
            total_runs=series.total,
            points=[
                SeriesPointOut(
                    run_id=point.run_id,
                    status=point.status,
                    value=point.value,
                    basis=point.basis,
                    change_pct=point.change_pct,
                    failure_reason=point.failure_reason,
                    commit=CommitOut(
                        sha=point.commit_sha,
                        title=point.commit_title,
                        author=point.commit_author,
                        committed_at=point.committed_at,
                        committed_at_estimated=point.committed_at_estimated,
                    ),
                )
                for point in series.points
            ],
        )


class StageOut(BaseModel):
    """One stage time."""

    name: str
    duration_ms: float


class PatchOut(BaseModel):
    """A patch of a candidate."""

    position: int
    kind: str
    ref: str
    pr_number: int | None


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


class GpuSnapshotOut(BaseModel):
    """One GPU before or after the run."""

    when: str
    index: int | None
    sm_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    temperature_c: float | None
    throttle_reasons: list[str]
    throttling: list[str]


class ConditionsOut(BaseModel):
    """The conditions a run was measured under (what the runner recorded) and the probes that failed."""

    cpu: CpuConditionsOut | None
    gpus: list[GpuSnapshotOut]
    errors: list[str]

    @classmethod
    def of(cls, conditions: RunConditions) -> ConditionsOut:
        """From the read model."""
        cpu = conditions.cpu
        return cls(
            cpu=CpuConditionsOut(
                cpu_count=cpu.cpu_count,
                other_cores=cpu.other_cores,
                other_share_pct=round(cpu.other_share_pct, 1),
                steal_pct=cpu.steal_pct,
                benchmark_cores=cpu.benchmark_cores,
                loadavg_before=list(cpu.loadavg_before),
                loadavg_after=list(cpu.loadavg_after),
                window_s=cpu.window_s,
            )
            if cpu is not None
            else None,
            gpus=[
                GpuSnapshotOut(
                    when=gpu.when,
                    index=gpu.index,
                    sm_clock_mhz=gpu.sm_clock_mhz,
                    max_sm_clock_mhz=gpu.max_sm_clock_mhz,
                    temperature_c=gpu.temperature_c,
                    throttle_reasons=list(gpu.throttle_reasons),
                    throttling=list(gpu.throttling),
                )
                for gpu in conditions.gpus
            ],
            errors=list(conditions.errors),
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

    @classmethod
    def of(cls, run: Run) -> RunOut:
        """From the ORM object, with stages and artifacts loaded."""
        return cls(
            id=run.id,
            status=str(run.status),
            failure_reason=run.failure_reason,
            source=str(run.source),
            case=run.case.slug,
            case_version=run.case.version,
            hardware=run.hardware_kind.name,
            commit=CommitOut.of(run.commit),
            candidate_label=run.candidate.label,
            patches=[
                PatchOut(position=p.position, kind=str(p.kind), ref=p.ref, pr_number=p.pr_number)
                for p in run.candidate.patches
            ],
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
            patches_applied=[str(ref) for ref in run.artifacts.patches_applied],
            patches_already_in=[str(ref) for ref in run.artifacts.patches_already_in],
            tree_sha=run.artifacts.tree_sha,
            job_id=run.job_id,
            attempt=run.attempt,
            step_times_ms=[float(value) for value in run.artifacts.step_times_ms],
            stages=[StageOut(name=stage.name, duration_ms=stage.duration_ms) for stage in run.stages],
            warnings=[str(warning) for warning in run.warnings],
            sources=[str(source) for source in run.sources],
            environment=dict(run.artifacts.environment),
            command=run.artifacts.command,
            requests_seen=run.requests_seen,
            warmup_requests=run.warmup_requests,
            measured_at=run.measured_at,
            created_at=run.created_at,
            log_url=f"/api/v1/runs/{run.id}/log",
            excluded_reason=run.excluded_reason,
            measurement_flag=run.measurement_flag.value if run.measurement_flag else None,
            rerun_job_id=run.rerun_job_id,
            conditions=ConditionsOut.of(conditions) if (conditions := _conditions(run)) else None,
        )


def _conditions(run: Run) -> RunConditions | None:
    conditions = conditions_from_environment(run.artifacts.environment)
    return conditions if conditions.recorded or conditions.errors else None


class Health(BaseModel):
    """Answer to ``GET /healthz``."""

    status: str
    database: str
    schema_revision: str | None
    version: str


def hardware_out(kind: HardwareKind) -> HardwareOut:
    """From the ORM object."""
    return HardwareOut(name=kind.name, description=kind.description)


class ChartPointOut(BaseModel):
    """One run drawn on the series chart: x is the commit time, y the run's value."""

    run_id: int
    kind: str  # nightly, confirm, bisect, pr, manual, import (or job without its job row)
    status: str
    value: float | None
    iqr: float | None
    excluded_reason: str | None
    flag: str | None = None  # contention, gpu_throttled, cpu_steal: excluded for its measuring conditions
    sha: str
    title: str
    author: str
    committed_at: dt.datetime


class ChartCommitOut(BaseModel):
    """A commit an alert points at."""

    sha: str
    title: str
    author: str
    committed_at: dt.datetime


class ChartAlertOut(BaseModel):
    """An alert placed at its first-bad commit."""

    id: int
    direction: str
    state: str
    change_pct: float
    before_value: float
    after_value: float
    first_bad: ChartCommitOut
    last_good: ChartCommitOut | None
    culprit: ChartCommitOut | None
    fixed_by: ChartCommitOut | None


class ChartBandOut(BaseModel):
    """The threshold band around the current level."""

    level: float
    low: float
    high: float
    pct: float
    since: dt.datetime | None
    description: str


class SeriesChartOut(BaseModel):
    """Everything the series chart draws, oldest point first."""

    case: str
    hardware: str
    metric: str
    unit: str
    threshold: str
    total_runs: int
    points: list[ChartPointOut]
    band: ChartBandOut | None
    alerts: list[ChartAlertOut]

    @classmethod
    def of(cls, chart: SeriesChart) -> SeriesChartOut:
        """From the read model."""
        data = chart.series

        def commit(value: ChartCommit | None) -> ChartCommitOut | None:
            if value is None:
                return None
            return ChartCommitOut(
                sha=value.sha, title=value.title, author=value.author, committed_at=value.committed_at
            )

        band = chart.band
        return cls(
            case=data.case.slug,
            hardware=data.hardware,
            metric=str(data.metric),
            unit=data.unit,
            threshold=chart.threshold.describe(),
            total_runs=data.total,
            points=[
                ChartPointOut(
                    run_id=point.run_id,
                    kind=point.kind,
                    status=point.status,
                    value=point.value,
                    iqr=point.iqr,
                    excluded_reason=point.excluded_reason,
                    flag=chart.flags.get(point.run_id),
                    sha=point.commit_sha,
                    title=point.commit_title,
                    author=point.commit_author,
                    committed_at=point.committed_at,
                )
                for point in data.points
            ],
            band=ChartBandOut(
                level=band.level,
                low=band.low,
                high=band.high,
                pct=band.pct,
                since=band.since,
                description=band.description,
            )
            if band
            else None,
            alerts=[
                ChartAlertOut(
                    id=alert.alert_id,
                    direction=alert.direction,
                    state=alert.state,
                    change_pct=alert.change_pct,
                    before_value=alert.before_value,
                    after_value=alert.after_value,
                    first_bad=ChartCommitOut(
                        sha=alert.first_bad.sha,
                        title=alert.first_bad.title,
                        author=alert.first_bad.author,
                        committed_at=alert.first_bad.committed_at,
                    ),
                    last_good=commit(alert.last_good),
                    culprit=commit(alert.culprit),
                    fixed_by=commit(alert.fixed_by),
                )
                for alert in chart.alerts
            ],
        )
