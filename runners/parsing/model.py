"""What the parsers return: plain, immutable dataclasses, independent of any database.

A :class:`ParsedRun` is exactly what gets stored for one benchmark run. Times are in
milliseconds, memory in MiB (1 MiB = 2**20 bytes; sglang's "GB" lines are GiB).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType


class RunStatus(StrEnum):
    """Outcome of one run: a measurement, or a failure that carries a reason and no number."""

    OK = "ok"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class StageTiming:
    """One pipeline stage (``DenoisingStage``, ``DecodingStage``, ...) and its wall time in ms."""

    name: str
    duration_ms: float


@dataclass(frozen=True, slots=True)
class RequestSummary:
    """One request a log shows, as ``perftrack parse-log`` lists it: which one is stored, and why.

    ``position`` counts the requests seen, from 1; ``outcome`` is ``complete``, ``failed`` or
    ``incomplete`` (the log ends inside it, or its denoising loop never reported).
    """

    position: int
    warmup: bool
    outcome: str
    denoise_step_count: int | None
    denoise_step_mean_ms: float | None
    denoise_stage_ms: float | None
    stored: bool
    note: str


@dataclass(frozen=True, slots=True)
class ParsedRun:
    """Everything a log (and optionally a perf dump) says about the measured request.

    ``status`` is ``FAILED`` whenever the run did not produce a trustworthy measurement; then
    ``failure_reason`` says why in one readable sentence and the numbers are ``None``/empty.
    ``denoise_step_ms`` is the value of record: the median of ``step_times_ms`` when per-step times
    are known, else the average the log reports (``denoise_step_basis`` says which).
    """

    status: RunStatus
    failure_reason: str | None = None
    denoise_step_count: int | None = None
    step_times_ms: tuple[float, ...] = ()
    denoise_step_ms: float | None = None
    denoise_step_basis: str | None = None  # "median" or "mean"
    denoise_step_mean_ms: float | None = None
    denoise_step_median_ms: float | None = None
    denoise_stage_ms: float | None = None
    stages: tuple[StageTiming, ...] = ()
    e2e_ms: float | None = None
    peak_memory_mb: float | None = None
    requests_seen: int = 0
    warmup_requests: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)
    sources: tuple[str, ...] = ()  # "log", "perf_dump", "performance_log"
    requests: tuple[RequestSummary, ...] = ()  # every request the log shows, warmups included


class ParseError(ValueError):
    """Input that cannot be read at all (a truncated or malformed JSON dump, an empty file).

    A log that *is* readable but shows a failed run is not a ``ParseError``: it parses to a
    ``ParsedRun`` with ``status=FAILED``.
    """


@dataclass(frozen=True, slots=True)
class MemoryCheckpoint:
    """One ``memory_checkpoints`` entry of a perf dump, in MiB (``None`` where the dump omits it).

    ``peak_host_anon_mb`` (0.5.23: the worker's peak anonymous host memory) is ``None`` where
    the dump writes 0.0, which sglang uses for "not sampled".
    """

    name: str
    allocated_mb: float | None = None
    reserved_mb: float | None = None
    peak_allocated_mb: float | None = None
    peak_reserved_mb: float | None = None
    peak_host_anon_mb: float | None = None


@dataclass(frozen=True, slots=True)
class PerfDump:
    """One request as sglang's ``--perf-dump-path`` JSON (or one ``performance.log`` record) gives it.

    ``stages`` come from the dump's ``steps`` list (which, despite the name, holds pipeline
    stages); ``denoise_steps_ms`` holds the per-denoising-step times, in step order.
    ``peak_memory_mb`` is the highest ``peak_reserved_mb`` over the request's own memory
    checkpoints, the same quantity sglang logs as "Peak GPU memory" / "Peak memory usage";
    the replica-wide ones (``load_peak``, ``warmup_peak``, ``runtime_peak``) are kept in
    ``memory_checkpoints`` but left out of it (see :mod:`runners.parsing.perf_dump`).
    """

    total_duration_ms: float | None = None
    stages: tuple[StageTiming, ...] = ()
    denoise_steps_ms: tuple[float, ...] = ()
    memory_checkpoints: tuple[MemoryCheckpoint, ...] = ()
    peak_memory_mb: float | None = None
    request_id: str | None = None
    commit_hash: str | None = None
    tag: str | None = None
    timestamp: str | None = None
    meta: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()

    @property
    def denoise_stage_ms(self) -> float | None:
        """Wall time of the denoising stage, if the dump lists one."""
        for stage in self.stages:
            if is_denoise_stage(stage.name):
                return stage.duration_ms
        return None


def is_denoise_stage(name: str) -> bool:
    """Tell whether a stage name is a denoising loop (``DenoisingStage``, ``DenoisingAVStage`` ...)."""
    # Some pipelines run a "BeforeDenoisingStage" that prepares inputs and does not denoise.
    return "denois" in name.lower() and not name.startswith("BeforeDenois")
