"""The detectors compared, each as ``values -> flags`` over one series of nightly run medians.

Every detector sees the same plain list of values (one run per commit, oldest first) and answers
with flagged commits (the first commit at the new level) and a direction. Peers are imported when
used, so the rest of the benchmark (and the tests) run without them installed.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tracker.statistics.changepoints import detect_changes

THRESHOLD_PCT = 2.0
OTAVA_WINDOW = 50
OTAVA_MAX_PVALUE = 0.001
CONBENCH_Z = 5.0
CONBENCH_LOOKBACK = 100
CONBENCH_MIN_HISTORY = 10
FIXED_PCT = 5.0
FIXED_BASELINE = 5


@dataclass(frozen=True, slots=True)
class Flag:
    """A detected change at commit ``index`` (first commit at the new level); direction +1 is slower."""

    index: int
    direction: int


@dataclass(frozen=True, slots=True)
class Detector:
    """A named detector and how it was configured (one line, for the tables and the docs)."""

    name: str
    config: str
    detect: Callable[[Sequence[float]], list[Flag]]
    available: bool = True


def perftrack(values: Sequence[float]) -> list[Flag]:
    """perftrack's ``detect_changes`` at the 2 % threshold; only established changes count."""
    detection = detect_changes([[value] for value in values], threshold_pct=THRESHOLD_PCT)
    return [
        Flag(change.index, 1 if change.is_regression else -1)
        for change in detection.changes
        if change.established
    ]


def otava(values: Sequence[float]) -> list[Flag]:
    """Apache Otava's windowed E-divisive with its t-test merge step (``compute_change_points``)."""
    from otava.analysis import compute_change_points

    points, _ = compute_change_points(
        list(values),
        window_len=OTAVA_WINDOW,
        max_pvalue=OTAVA_MAX_PVALUE,
        min_magnitude=THRESHOLD_PCT / 100.0,
    )
    return [Flag(int(point.index), 1 if point.stats.mean_2 > point.stats.mean_1 else -1) for point in points]


def asv(values: Sequence[float]) -> list[Flag]:
    """asv's ``detect_steps`` (L1 Potts model, automatic penalty); every step of at least 2 % is a flag."""
    from asv.step_detect import detect_steps

    steps = detect_steps(list(values))
    flags = []
    for before, after in itertools.pairwise(steps):
        change = after[2] / before[2] - 1.0
        if abs(change) * 100.0 >= THRESHOLD_PCT:
            flags.append(Flag(int(after[0]), 1 if change > 0 else -1))
    return flags


def conbench_zscore(values: Sequence[float]) -> list[Flag]:
    """Conbench's lookback z-score: a value at least 5 standard deviations from the last 100 values' mean.

    Conbench judges each commit against the distribution of the commits before it and marks that
    commit; after a step the next few commits are usually flagged too, until the history absorbs
    the new level. Those runs of flags in one direction are counted once, at their first commit
    (generous: a maintainer would see one alert per commit).
    """
    data = np.asarray(values, dtype=float)
    flags: list[Flag] = []
    previous = -2
    previous_direction = 0
    for index in range(CONBENCH_MIN_HISTORY, data.size):
        history = data[max(0, index - CONBENCH_LOOKBACK) : index]
        spread = float(history.std(ddof=1))
        if spread <= 0:
            continue
        z = (float(data[index]) - float(history.mean())) / spread
        if abs(z) < CONBENCH_Z:
            continue
        direction = 1 if z > 0 else -1
        if not (index == previous + 1 and direction == previous_direction):
            flags.append(Flag(index, direction))
        previous, previous_direction = index, direction
    return flags


def fixed_threshold(values: Sequence[float]) -> list[Flag]:
    """A CI-style gate: a value at least 5 % from the median of the 5 values before it.

    Consecutive flags in one direction count once, at the first.
    """
    flags: list[Flag] = []
    previous = -2
    previous_direction = 0
    for index in range(1, len(values)):
        baseline = statistics.median(values[max(0, index - FIXED_BASELINE) : index])
        change = math.log(values[index] / baseline)
        if abs(math.expm1(change)) * 100.0 < FIXED_PCT:
            continue
        direction = 1 if change > 0 else -1
        if not (index == previous + 1 and direction == previous_direction):
            flags.append(Flag(index, direction))
        previous, previous_direction = index, direction
    return flags


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def detectors() -> list[Detector]:
    """perftrack first, then the peers (a peer that is not installed is listed as unavailable)."""
    return [
        Detector("perftrack", "detect_changes, threshold 2 %, established changes only", perftrack),
        Detector(
            "otava",
            f"compute_change_points: window {OTAVA_WINDOW}, p {OTAVA_MAX_PVALUE}, min_magnitude 0.02",
            otava,
            _installed("otava.analysis"),
        ),
        Detector(
            "asv",
            "detect_steps; steps of >= 2 % between neighbouring segments",
            asv,
            _installed("asv.step_detect"),
        ),
        Detector(
            "conbench-z",
            f"|z| >= {CONBENCH_Z:g} vs mean/sd of the previous {CONBENCH_LOOKBACK} (>= {CONBENCH_MIN_HISTORY})",
            conbench_zscore,
        ),
        Detector(
            "fixed-5%",
            f">= {FIXED_PCT:g} % from the median of the previous {FIXED_BASELINE}",
            fixed_threshold,
        ),
    ]
