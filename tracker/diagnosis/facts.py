"""What a diagnosis reads of a run and what it says: plain data, no database.

:class:`RunFacts` is one run as the rules see it (built from the stored run by
:mod:`tracker.diagnosis.loading`, or by hand in tests); :class:`Finding` is one line of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class FindingKind(StrEnum):
    """What a finding is about."""

    COMPILE = "compile"  # torch.compile counters differ
    GPU_STATE = "gpu_state"  # the machine differs: clocks, throttling, flagged runs, GPU, runner
    WARMUP = "warmup"  # step 0 against the steady state
    STAGE = "stage"  # which pipeline stage moved
    MEMORY = "memory"  # peak memory
    GRAPH_BREAK = "graph_break"  # a graph break the culprit's evidence run has and the last good one not
    OPERATOR = "operator"  # an operator whose self time per step grew (evidence runs' profiles)
    OUTPUT = "output"  # the seeded output changed beyond the case's tolerance


@dataclass(frozen=True)
class Finding:
    """One line of a diagnosis: its kind, the sentence, the numbers behind it, how telling it is.

    ``weight`` orders findings (highest first): compile counters are facts about the code, then a
    warning about the machine, then where the time went (steps, stages), then memory.
    """

    kind: FindingKind
    summary: str
    detail: dict[str, Any]
    weight: float


class Counters(NamedTuple):
    """torch.compile counters of a run (``None``: not reported)."""

    graph_breaks: int | None = None
    unique_graphs: int | None = None
    frames_compiled: int | None = None
    recompiles: int | None = None


@dataclass(frozen=True)
class GpuReading:
    """What the runner recorded of the run's GPUs: median clocks of its busy snapshots (an idle
    GPU's clock says nothing about the benchmark), the GPU model and driver."""

    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    model: str | None = None
    driver: str | None = None


@dataclass(frozen=True)
class RunFacts:
    """One run as a diagnosis sees it. Times in ms, memory in MiB.

    ``flag`` is the measurement flag (a run on a throttled GPU, beside a CPU hog); such a run, and
    one left out for another reason (``excluded_reason``), counts for nothing but warnings and
    compile counters.
    """

    run_id: int
    ok: bool = True
    flag: str | None = None
    excluded_reason: str | None = None
    runner: str | None = None
    step_ms: float | None = None
    first_step_ms: float | None = None
    steady_step_ms: float | None = None
    stages: tuple[tuple[str, float], ...] = ()
    peak_memory_mb: float | None = None
    counters: Counters = field(default_factory=Counters)
    gpu: GpuReading = field(default_factory=GpuReading)

    @property
    def counted(self) -> bool:
        """Whether the run's numbers count: it succeeded and nothing disqualified it."""
        return self.ok and self.excluded_reason is None and self.flag is None

    def stage_times(self) -> dict[str, float]:
        """Per stage name, its time in this run (a stage the pipeline ran twice counts its sum)."""
        times: dict[str, float] = {}
        for name, duration in self.stages:
            times[name] = times.get(name, 0.0) + duration
        return times


@dataclass(frozen=True)
class DiagnosisConfig:
    """How far a quantity must move before a finding names it (besides standing out of the noise).

    Detection thresholds are 2–5 %: a steady-state step that moved 2 % is the change itself. Step 0
    carries compilation and cache warm-up and moves more from run to run; stages and memory need a
    few percent and an absolute amount, so a 0.2 ms stage doubling is not news.
    """

    z: float = 3.0  # standard errors a change must stand out by, where the groups show a spread
    steady_min_pct: float = 2.0
    first_step_min_pct: float = 10.0
    first_step_min_ms: float = 1.0
    stage_min_pct: float = 3.0
    stage_min_ms: float = 1.0
    stage_min_share_pct: float = 0.5  # of all stages' time before
    memory_min_pct: float = 3.0
    memory_min_mb: float = 64.0
    clock_min_pct: float = 5.0


DEFAULT_CONFIG = DiagnosisConfig()


def counted(runs: list[RunFacts] | tuple[RunFacts, ...]) -> list[RunFacts]:
    """The runs whose numbers count."""
    return [run for run in runs if run.counted]


def format_pct(change: float) -> str:
    """``+9.1 %``; ``+530 %`` from 100 % on."""
    return f"{change:+.0f} %" if abs(change) >= 100 else f"{change:+.1f} %"


def format_ms(value: float) -> str:
    """``263.9 ms``, ``13.19 s`` from a second on."""
    return f"{value / 1000:.2f} s" if abs(value) >= 1000 else f"{value:.1f} ms"


def format_mib(value: float, *, signed: bool = False) -> str:
    """``47.8 GiB`` from a GiB on, else ``512 MiB``; ``signed``: with ``+`` or ``-``."""
    sign = "+" if signed else ""
    if abs(value) >= 1024:
        return f"{value / 1024:{sign}.1f} GiB"
    return f"{value:{sign}.0f} MiB"


@dataclass(frozen=True)
class OutputFact:
    """How the first bad commit's (or head arm's) seeded output compares with the last good one's.

    ``changed``: beyond ``tolerance_db``; PSNR (dB) and SSIM are the lowest over the frames
    (``None`` where no finite value was measured).
    """

    changed: bool
    tolerance_db: float
    psnr_db: float | None = None
    ssim: float | None = None
    before_run_id: int | None = None
    after_run_id: int | None = None
    against: str = "the last good commit"  # what the "before" side is, as the finding names it ("base")
