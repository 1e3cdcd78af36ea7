"""Summary statistics of one run's per-step times (pure functions over plain sequences)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepSummary:
    """Location and spread of a run's denoise step times, in ms.

    ``first_ms`` is step 0 (it often carries compilation or cache warm-up); ``steady_ms`` is the
    median of the remaining steps, the steady state.
    """

    count: int
    median_ms: float
    mean_ms: float
    first_ms: float
    steady_ms: float | None
    iqr_ms: float | None
    fastest_ms: float = 0.0


def summarize_steps(step_times_ms: Sequence[float]) -> StepSummary:
    """Summarise per-step times.

    Parameters
    ----------
    step_times_ms
        Denoise step durations in order, step 0 first; must not be empty.

    Returns
    -------
    StepSummary
        Median, mean, step 0, steady-state median (steps 1..n-1) and interquartile range.
    """
    if not step_times_ms:
        raise ValueError("no step times to summarise")
    values = list(step_times_ms)
    rest = values[1:]
    iqr = None
    if len(values) >= 4:
        quartiles = statistics.quantiles(values, n=4, method="inclusive")
        iqr = quartiles[2] - quartiles[0]
    return StepSummary(
        count=len(values),
        median_ms=statistics.median(values),
        mean_ms=statistics.fmean(values),
        first_ms=values[0],
        steady_ms=statistics.median(rest) if rest else None,
        iqr_ms=iqr,
        fastest_ms=min(values),
    )


# Steps a benchmark timed by its own thread's CPU time (the toy on one CPU thread) are only ever
# slowed by the host: a neighbour on the other hyperthread or a noisy tenant slows stretches of
# steps, whole runs at times, by up to 70 %, and never speeds one up. Their fastest step is the
# cost of the code; it varied 3 % between fresh processes where the median varied 25 %
# (docs/toy-noise.md). Wall-clock steps (GPUs) keep the median, which a step-0 outlier cannot move.
THREAD_CPU_CLOCK = "thread_cpu"
FASTEST_BASIS = "fastest"  # the basis of a value of record taken from steps timed in thread CPU time


def value_of_record(summary: StepSummary, *, step_clock: str | None) -> tuple[float, str]:
    """A run's value of record and its basis: the median step, or the fastest for CPU-time steps."""
    if step_clock == THREAD_CPU_CLOCK:
        return summary.fastest_ms, FASTEST_BASIS
    return summary.median_ms, "median"


def change_pct(before: float, after: float) -> float | None:
    """Relative change from ``before`` to ``after`` in percent (``None`` when before is 0)."""
    if before == 0:
        return None
    return (after - before) / before * 100.0
