"""Measurement hygiene: a run measured beside a CPU hog, on a throttled GPU or under CPU steal is
stored, flagged, left out of detection, and its job is queued once more.

The runner records the conditions in the run's environment (``environment["conditions"]``, see
``runners/workloads/conditions.py``): the CPU time other processes took during the run, CPU steal,
the load average, and each GPU's clocks and throttle reasons before and after. Here:

* :func:`conditions_from_environment` reads them leniently (an old runner sends none, a broken
  probe sends an ``error``: both are "not recorded", never a flag);
* :func:`assess_conditions` is the pure decision: ``None`` (clean) or a :class:`ConditionFlag`;
* :func:`condition_flag` gives the flag of a run being stored (ingest);
* :func:`tracker.workflows.reruns.requeue_if_flagged` queues the flagged run's job once more
  when a job's run is stored, and a re-run flagged again once more, until a budget of time since
  the first flagged try is spent; the last run is then kept, excluded, and not re-queued.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracker.enums import RunStatus
from tracker.models.runs import MeasurementFlag

# Contention, for runs without GPUs (the CPU toy): other processes must take at least half a core
# AND a quarter of the machine, limits far from both a neighbour burning a core and the runner's own
# background (the figures: docs/toy-noise.md, "neighbours"). The share keeps a 128-core GPU host
# from flagging a single busy shell; the floor keeps a 1-core machine from flagging the runner's own
# few percent. GPU runs are judged by their GPUs instead: another runner's benchmark on the same
# host's other GPUs would read as contention here.
CONTENTION_MIN_CORES = 0.5
CONTENTION_SHARE_PCT = 25.0
# CPU steal takes time straight from the benchmark's threads. Detection thresholds are 2–5 % and a
# quiet VM steals well under 1 %; from 5 % on the host is busy enough to move a result by more
# than the noise detection allows for.
STEAL_PCT = 5.0
# Throttle reasons that slow a GPU. gpu_idle, applications_clocks_setting and sync_boost are not
# throttling: an idle GPU between runs reads gpu_idle, and the other two are clock policies.
THROTTLING = (
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
)


@dataclass(frozen=True)
class CpuConditions:
    """What the whole CPU did while the benchmark ran (cores = CPU-seconds per second)."""

    cpu_count: int
    other_cores: float
    steal_pct: float | None = None
    benchmark_cores: float | None = None
    loadavg_before: tuple[float, ...] = ()
    loadavg_after: tuple[float, ...] = ()
    window_s: float | None = None

    @property
    def other_share_pct(self) -> float:
        """Other processes' CPU as a share of the machine, percent."""
        return self.other_cores / self.cpu_count * 100.0


@dataclass(frozen=True)
class GpuSnapshot:
    """One GPU before or after the run."""

    when: str  # "before" or "after"
    index: int | None
    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()

    @property
    def throttling(self) -> tuple[str, ...]:
        """The reasons that slow the GPU down (not idle, not a clock policy)."""
        return tuple(reason for reason in self.throttle_reasons if reason in THROTTLING)


@dataclass(frozen=True)
class RunConditions:
    """The conditions a run was measured under, as far as the runner could record them."""

    cpu: CpuConditions | None = None
    gpus: tuple[GpuSnapshot, ...] = ()
    errors: tuple[str, ...] = ()  # probes that failed

    @property
    def recorded(self) -> bool:
        """Whether anything was recorded at all."""
        return self.cpu is not None or bool(self.gpus)


@dataclass(frozen=True)
class ConditionFlag:
    """Why a run's number cannot be trusted: the first problem's kind, and every problem in words."""

    kind: MeasurementFlag
    reason: str


def assess_conditions(conditions: RunConditions, *, cpu_contention: bool = True) -> ConditionFlag | None:
    """``None`` when the run was measured under clean conditions, else the flag and its reason.

    Parameters
    ----------
    conditions
        What the runner recorded; what it could not record counts as clean.
    cpu_contention
        Whether other processes' CPU time flags a run without GPUs (``Settings.flag_cpu_contention``).

    A run whose steps were timed in its thread's CPU time (the toy's ``denoise_step_clock:
    thread_cpu``) is judged as any other: other processes' time slices are not in its numbers, but
    what they do to the caches, the memory bandwidth and a core two vCPUs share is, and the runner
    cannot tell a neighbour that spins in registers from one that streams memory (both take a
    core). Measured on three guests (``docs/toy-noise.md``): a spinning neighbour moved the fastest
    step by 0-2 %, a memory-streaming one by -1 to +10 %, the demo tracker's own follow-ups beside
    a run by +25 %; detection must catch 2 %. A flagged CPU run costs one more run of seconds.

    Returns
    -------
    ConditionFlag or None
        The kind of the first problem found (throttling, contention, steal, in that order) and a
        reason naming every problem, e.g. ``"contention: other processes took 0.92 cores (46 % of
        2) during the run"``.
    """
    problems: list[tuple[MeasurementFlag, str]] = []
    throttled = _throttling(conditions.gpus)
    if throttled:
        problems.append((MeasurementFlag.GPU_THROTTLED, f"GPU throttled: {throttled}"))
    cpu = conditions.cpu
    if cpu is not None:
        if (
            cpu_contention
            and not conditions.gpus
            and cpu.other_cores >= CONTENTION_MIN_CORES
            and cpu.other_share_pct >= CONTENTION_SHARE_PCT
        ):
            share = f"{cpu.other_share_pct:.0f} % of {cpu.cpu_count}"
            took = f"other processes took {cpu.other_cores:.2f} cores ({share}) during the run"
            problems.append((MeasurementFlag.CONTENTION, f"contention: {took}"))
        if cpu.steal_pct is not None and cpu.steal_pct >= STEAL_PCT:
            problems.append((MeasurementFlag.CPU_STEAL, f"CPU steal {cpu.steal_pct:.0f} %"))
    if not problems:
        return None
    return ConditionFlag(kind=problems[0][0], reason="; ".join(reason for _, reason in problems))


def _throttling(gpus: Sequence[GpuSnapshot]) -> str:
    """``"sw_thermal_slowdown before/after (GPU 3)"``-style words for the throttling seen, or ``""``."""
    whens: dict[str, list[str]] = {}
    indices: set[int] = set()
    for snapshot in gpus:
        for reason in snapshot.throttling:
            seen = whens.setdefault(reason, [])
            if snapshot.when not in seen:
                seen.append(snapshot.when)
            if snapshot.index is not None:
                indices.add(snapshot.index)
    if not whens:
        return ""
    order = {"before": 0, "after": 1}
    words = ", ".join(
        f"{reason} {'/'.join(sorted(seen, key=lambda when: order.get(when, 2)))}"
        for reason, seen in sorted(whens.items(), key=lambda item: THROTTLING.index(item[0]))
    )
    on = f" (GPU {', '.join(str(index) for index in sorted(indices))})" if indices else ""
    return words + on


def conditions_from_environment(environment: Mapping[str, Any]) -> RunConditions:
    """The ``conditions`` a runner put into a run's environment; anything malformed is left out."""
    raw = environment.get("conditions")
    if not isinstance(raw, Mapping):
        return RunConditions()
    errors: list[str] = []
    cpu = _cpu(raw.get("cpu"), errors)
    gpus: list[GpuSnapshot] = []
    gpu = raw.get("gpu")
    if isinstance(gpu, Mapping):
        if isinstance(gpu.get("error"), str):
            errors.append(f"gpu: {gpu['error']}")
        for when in ("before", "after"):
            rows = gpu.get(when)
            if isinstance(rows, list):
                gpus.extend(_gpu(when, row) for row in rows if isinstance(row, Mapping))
    return RunConditions(cpu=cpu, gpus=tuple(gpus), errors=tuple(errors))


def _cpu(raw: object, errors: list[str]) -> CpuConditions | None:
    if not isinstance(raw, Mapping):
        return None
    if isinstance(raw.get("error"), str):
        errors.append(f"cpu: {raw['error']}")
    cpu_count, other = _number(raw.get("cpu_count")), _number(raw.get("other_cores"))
    if cpu_count is None or cpu_count < 1 or other is None:
        return None
    return CpuConditions(
        cpu_count=int(cpu_count),
        other_cores=max(other, 0.0),
        steal_pct=_number(raw.get("steal_pct")),
        benchmark_cores=_number(raw.get("benchmark_cores")),
        loadavg_before=_numbers(raw.get("loadavg_before")),
        loadavg_after=_numbers(raw.get("loadavg_after")),
        window_s=_number(raw.get("window_s")),
    )


def _gpu(when: str, row: Mapping[str, Any]) -> GpuSnapshot:
    index = _number(row.get("index"))
    reasons = row.get("throttle_reasons")
    return GpuSnapshot(
        when=when,
        index=int(index) if index is not None else None,
        sm_clock_mhz=_number(row.get("sm_clock_mhz")),
        max_sm_clock_mhz=_number(row.get("max_sm_clock_mhz")),
        temperature_c=_number(row.get("temperature_c")),
        throttle_reasons=tuple(str(reason) for reason in reasons) if isinstance(reasons, list) else (),
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _numbers(value: object) -> tuple[float, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(number for item in value if (number := _number(item)) is not None)


def condition_flag(
    *, status: RunStatus, environment: Mapping[str, Any], cpu_contention: bool = True
) -> ConditionFlag | None:
    """The flag of a run being stored: ``None`` when its conditions were clean, or it failed."""
    if status is not RunStatus.OK:
        return None  # a failed run measured nothing to exclude
    return assess_conditions(conditions_from_environment(environment), cpu_contention=cpu_contention)
