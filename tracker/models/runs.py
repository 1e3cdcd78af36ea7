"""Runs: what one job attempt or one import measured.

The ``runs`` row holds only summary columns, so reading a series of thousands of runs stays
cheap. Per-step vectors, the raw log and the environment live in ``run_artifacts`` (1:1), loaded
only for a single run's page.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import RunSource, RunStatus
from tracker.models.base import (
    Base,
    JSONType,
    UTCDateTime,
    created_at,
    int_pk,
    json_dict,
    json_list,
    str_enum,
)
from tracker.models.catalog import Case, HardwareKind
from tracker.models.vcs import Candidate, Commit


class MeasurementFlag(StrEnum):
    """Why the conditions a run was measured under disqualify its number (``tracker.ingest.conditions``)."""

    CONTENTION = "contention"  # other processes took a share of the CPU beside the benchmark
    GPU_THROTTLED = "gpu_throttled"  # a GPU reported thermal or power throttling before or after
    CPU_STEAL = "cpu_steal"  # the hypervisor took CPU time from the machine


class Run(Base):
    """Summary of one measured (or failed) run. Times in ms, memory in MiB."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_series", "case_id", "hardware_kind_id", "status", "commit_id"),
        Index("ix_runs_measured_at", "measured_at"),  # the overview's newest nightly runs
        UniqueConstraint("job_id", "attempt"),
    )

    id: Mapped[int_pk]
    idempotency_key: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    payload_digest: Mapped[str] = mapped_column(
        String(64), nullable=False, comment="SHA-256 of the upload, to tell a retry from a key reuse"
    )
    source: Mapped[RunSource] = mapped_column(str_enum(RunSource, "run_source"), nullable=False)
    status: Mapped[RunStatus] = mapped_column(str_enum(RunStatus, "run_status"), nullable=False)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"), nullable=False, index=True)
    commit_id: Mapped[int] = mapped_column(
        ForeignKey("commits.id"), nullable=False, index=True, comment="the candidate's base commit"
    )
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    attempt: Mapped[int | None] = mapped_column(Integer)
    runner_id: Mapped[int | None] = mapped_column(ForeignKey("runners.id", ondelete="SET NULL"))

    denoise_step_ms: Mapped[float | None] = mapped_column(Float, comment="value of record, ms")
    # "median", "mean" (only the log's average known) or "fastest" (steps timed in thread CPU time).
    denoise_step_basis: Mapped[str | None] = mapped_column(String(16), comment="median or mean")
    denoise_step_count: Mapped[int | None] = mapped_column(Integer)
    denoise_step_mean_ms: Mapped[float | None] = mapped_column(Float)
    denoise_step_median_ms: Mapped[float | None] = mapped_column(Float)
    denoise_step_first_ms: Mapped[float | None] = mapped_column(
        Float, comment="step 0 (compile, warm caches)"
    )
    denoise_step_steady_ms: Mapped[float | None] = mapped_column(Float, comment="median of steps 1..n-1")
    denoise_step_iqr_ms: Mapped[float | None] = mapped_column(Float, comment="interquartile range of steps")
    denoise_stage_ms: Mapped[float | None] = mapped_column(Float)
    e2e_ms: Mapped[float | None] = mapped_column(Float)
    peak_memory_mb: Mapped[float | None] = mapped_column(Float, comment="MiB")
    graph_breaks: Mapped[int | None] = mapped_column(Integer)
    recompiles: Mapped[int | None] = mapped_column(Integer)
    unique_graphs: Mapped[int | None] = mapped_column(Integer)
    frames_compiled: Mapped[int | None] = mapped_column(Integer)
    requests_seen: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    warmup_requests: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    warnings: Mapped[json_list]
    sources: Mapped[json_list] = mapped_column(comment="log, perf_dump, performance_log")
    measured_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), comment="when it ran, UTC")
    excluded_reason: Mapped[str | None] = mapped_column(
        Text, comment="why detection leaves this run out (an outlier a re-run refuted); NULL: counted"
    )
    measurement_flag: Mapped[MeasurementFlag | None] = mapped_column(
        str_enum(MeasurementFlag, "measurement_flag"),
        comment="why the measuring conditions disqualify the run (reason in excluded_reason); NULL: clean",
    )
    rerun_job_id: Mapped[int | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"),
        index=True,
        comment="the job queued to measure again because this run was flagged",
    )
    created_at: Mapped[created_at]

    case: Mapped[Case] = relationship()
    hardware_kind: Mapped[HardwareKind] = relationship()
    candidate: Mapped[Candidate] = relationship()
    commit: Mapped[Commit] = relationship()
    stages: Mapped[list[RunStage]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="RunStage.position"
    )
    artifacts: Mapped[RunArtifacts] = relationship(
        back_populates="run", cascade="all, delete-orphan", lazy="raise_on_sql"
    )


class RunStage(Base):
    """One pipeline stage's time within a run, in the order the pipeline ran them."""

    __tablename__ = "run_stages"
    __table_args__ = (UniqueConstraint("run_id", "position"),)

    id: Mapped[int_pk]
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    duration_ms: Mapped[float] = mapped_column(Float, nullable=False)

    run: Mapped[Run] = relationship(back_populates="stages")


class RunArtifacts(Base):
    """The heavy parts of a run: per-step times, the raw log, environment, command line."""

    __tablename__ = "run_artifacts"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    step_times_ms: Mapped[json_list] = mapped_column(comment="per denoise step, ms, step 0 first")
    environment: Mapped[json_dict] = mapped_column(comment="GPU, driver, CUDA, torch, sglang, clocks, host")
    command: Mapped[str] = mapped_column(Text, nullable=False, default="")
    raw_log: Mapped[str] = mapped_column(Text, nullable=False, default="")
    log_truncated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    perf_dump: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    output_digest: Mapped[str | None] = mapped_column(String(128), comment="hash of the generated output")
    patches_applied: Mapped[json_list] = mapped_column(comment="patch refs cherry-picked for this run")
    patches_already_in: Mapped[json_list] = mapped_column(comment="carried patches the base already had")
    tree_sha: Mapped[str | None] = mapped_column(String(40), comment="git tree the benchmark ran")

    run: Mapped[Run] = relationship(back_populates="artifacts")


class SeriesCount(Base):
    """How many runs, and failed runs, a case × hardware series has: kept by ingest, so the overview
    reads one row a series instead of counting every run."""

    __tablename__ = "series_counts"

    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id", ondelete="CASCADE"), primary_key=True)
    hardware_kind_id: Mapped[int] = mapped_column(
        ForeignKey("hardware_kinds.id", ondelete="CASCADE"), primary_key=True
    )
    runs: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    failed: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class SeriesLatest(Base):
    """What the overview shows of a case × hardware series, kept as runs are stored
    (:mod:`tracker.series.latest`): its newest series points and its last nightly run, so the page
    reads one row a series instead of ranking the recent runs of every series."""

    __tablename__ = "series_latest"

    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id", ondelete="CASCADE"), primary_key=True)
    hardware_kind_id: Mapped[int] = mapped_column(
        ForeignKey("hardware_kinds.id", ondelete="CASCADE"), primary_key=True
    )
    points: Mapped[json_list] = mapped_column(
        comment="newest series points first, at most 20: [run id, commit id, commit time (ISO 8601, UTC) "
        "when stored, value of record ms, its basis]"
    )
    nightly_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), comment="the last nightly run")
    nightly_status: Mapped[RunStatus | None] = mapped_column(str_enum(RunStatus, "run_status"))
    nightly_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when the last nightly run ran (else was stored), UTC"
    )
