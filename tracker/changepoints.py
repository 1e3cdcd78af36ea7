"""Change points in a nightly series (pure functions over plain sequences).

A series is given commit by commit, oldest first, each commit with the values of its successful
runs. The detector answers: where did the level change, by how much, how sure is it, and which
changes are still only suspects that a re-run must confirm.

How it decides (and why):

* Values are compared as logarithms, so changes are relative and the noise is a coefficient of
  variation (:mod:`tracker.noise`, robust to the step changes it is looking for).
* **Level shifts** are found by binary segmentation. Every split of a segment compares the
  ``window`` commits before it with the ``window`` after it by the Hodges–Lehmann shift (the
  median of all pairwise differences): a bad night or two inside a window barely moves it, where
  a mean would. The shift's standard error follows from the series' noise (efficiency 3/π of the
  mean for normal data), so ``z`` is shift / error. The best split of a segment is kept when
  ``|z| ≥ z_crit`` **and** the shift is at least the threshold, then both halves are searched
  again. Windows (rather than whole segments) keep slow drift from adding up into a step.
* The kept split is then **placed exactly**: within a few commits of it, the boundary that best
  separates the two levels (least absolute deviation) wins, so the flagged commit is the first
  bad one, not a neighbour.
* **Short excursions** (fewer than ``min_after`` commits away from the level and back) are what
  a bad night looks like, and also what a regression fixed by the next commit looks like. They
  count as changes only when measured more than once: ``min_after`` runs in all, or a commit
  re-run (a confirmation) whose every run stands apart. Otherwise they are reported as outliers.
* **The newest commits** at a new level are a *suspect* change (``established = False``) until
  ``min_after`` runs or a confirming re-run hold it up.
* With too little history for a noise estimate, consecutive commits are compared directly and
  every change at least the threshold is reported with ``single_run_basis = True``.
* The threshold that applies is the model's, or what the noise allows when that is larger: the
  smallest shift a full window on each side can tell from noise at ``z_crit``.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from tracker.noise import NoiseEstimate, run_to_run_noise

# Variance of the Hodges–Lehmann shift relative to the difference of means, for normal data.
_HL_VARIANCE_FACTOR = math.pi / 3.0
_NORMAL = statistics.NormalDist()


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """Tuning of :func:`detect_changes`; the defaults are what ``benchmarks/detection`` measured best."""

    window: int = 20
    min_before: int = 3
    min_after: int = 3
    z_crit: float = 4.0
    refine_radius: int = 3
    lookback: int = 100
    min_noise_differences: int = 5
    noise_floor_pct: float = 0.05


@dataclass(frozen=True, slots=True)
class Change:
    """A change of level at commit ``index`` (the first commit at the new level).

    ``before`` and ``after`` are the levels on either side (ms, medians of the windows);
    ``z`` and ``p_value`` measure it against the series' noise (``None`` on single-run basis).
    ``established`` is false for a suspect that only a re-run or later runs can confirm.
    """

    index: int
    before: float
    after: float
    change_pct: float
    z: float | None
    p_value: float | None
    established: bool
    single_run_basis: bool
    runs_before: int
    runs_after: int
    kind: Literal["step", "excursion", "excursion_end", "suspect", "single"]

    @property
    def is_regression(self) -> bool:
        """Slower (bigger) after than before."""
        return self.after > self.before


@dataclass(frozen=True, slots=True)
class Detection:
    """What :func:`detect_changes` found in one series."""

    changes: tuple[Change, ...]
    outliers: tuple[int, ...]
    noise: NoiseEstimate | None
    threshold_pct: float
    model_threshold_pct: float
    noise_threshold_pct: float | None
    config: DetectorConfig = field(default_factory=DetectorConfig)

    @property
    def threshold_source(self) -> Literal["model", "noise"]:
        """Which threshold applies: the model's, or the larger one the noise imposes."""
        if self.noise_threshold_pct is not None and self.noise_threshold_pct > self.model_threshold_pct:
            return "noise"
        return "model"


def noise_threshold_pct(noise_pct: float, config: DetectorConfig) -> float:
    """The smallest shift (percent) a full window on both sides tells from noise at ``z_crit``.

    Parameters
    ----------
    noise_pct
        Run-to-run noise of the series, percent.
    config
        Detector settings (``window`` and ``z_crit`` matter).

    Returns
    -------
    float
        The shift in percent.
    """
    se = noise_pct / 100.0 * math.sqrt(_HL_VARIANCE_FACTOR * 2.0 / config.window)
    return (math.exp(config.z_crit * se) - 1.0) * 100.0


def detect_changes(
    commits: Sequence[Sequence[float]],
    *,
    threshold_pct: float,
    config: DetectorConfig | None = None,
    noise_floor_from_calibration_pct: float | None = None,
) -> Detection:
    """Find the changes of level in a series.

    Parameters
    ----------
    commits
        Per commit, oldest first, the values of its successful runs (positive, finite). A commit
        with no value must be left out by the caller.
    threshold_pct
        The model's threshold in percent (per hardware kind where one is set).
    config
        Detector settings; :class:`DetectorConfig` defaults when omitted.
    noise_floor_from_calibration_pct
        The smallest change an A/A calibration showed the setup can detect; the threshold that
        applies is never below it.

    Returns
    -------
    Detection
        Changes in commit order (established ones and suspects), outlier commits, the noise
        estimate and the threshold that applied.
    """
    config = config or DetectorConfig()
    if threshold_pct <= 0:
        raise ValueError("threshold_pct must be positive")
    runs = [tuple(float(value) for value in values) for values in commits]
    for position, values in enumerate(runs):
        if not values:
            raise ValueError(f"commit {position} has no value; leave it out")
        if any(value <= 0 or not math.isfinite(value) for value in values):
            raise ValueError(f"commit {position} has a value that is not positive and finite")
    noise = run_to_run_noise(
        runs,
        lookback=config.lookback,
        min_differences=config.min_noise_differences,
        floor_pct=config.noise_floor_pct,
    )
    floors = [threshold_pct]
    noise_threshold = None
    if noise is not None:
        noise_threshold = noise_threshold_pct(noise.cv_pct, config)
        floors.append(noise_threshold)
    if noise_floor_from_calibration_pct is not None:
        noise_threshold = max(noise_threshold or 0.0, noise_floor_from_calibration_pct)
        floors.append(noise_floor_from_calibration_pct)
    threshold = max(floors)
    if noise is None:
        changes: tuple[Change, ...] = tuple(_single_run_changes(runs, threshold))
        outliers: tuple[int, ...] = ()
    else:
        changes, outliers = _with_noise(runs, noise.sigma, threshold, config)
    return Detection(
        changes=changes,
        outliers=outliers,
        noise=noise,
        threshold_pct=threshold,
        model_threshold_pct=threshold_pct,
        noise_threshold_pct=noise_threshold,
        config=config,
    )


def _pct(log_shift: float) -> float:
    return (math.exp(log_shift) - 1.0) * 100.0


def _p_value(z: float) -> float:
    return 2.0 * (1.0 - _NORMAL.cdf(abs(z)))


def _single_run_changes(runs: list[tuple[float, ...]], threshold: float) -> list[Change]:
    """Without a noise estimate: each commit against the one before it."""
    levels = [statistics.median(values) for values in runs]
    changes = []
    for index in range(1, len(levels)):
        shift = math.log(levels[index] / levels[index - 1])
        if abs(_pct(shift)) >= threshold:
            changes.append(
                Change(
                    index=index,
                    before=levels[index - 1],
                    after=levels[index],
                    change_pct=_pct(shift),
                    z=None,
                    p_value=None,
                    established=_replicated(runs[index], levels[index - 1], shift, threshold),
                    single_run_basis=True,
                    runs_before=len(runs[index - 1]),
                    runs_after=len(runs[index]),
                    kind="single",
                )
            )
    return changes


def _replicated(values: tuple[float, ...], reference: float, shift: float, threshold: float) -> bool:
    """Whether a commit was measured more than once and every run stands apart in one direction."""
    if len(values) < 2:
        return False
    return all(
        abs(_pct(math.log(value / reference))) >= threshold and (value > reference) == (shift > 0)
        for value in values
    )


@dataclass(frozen=True, slots=True)
class _Split:
    index: int
    z: float
    shift: float


def _with_noise(
    runs: list[tuple[float, ...]], sigma: float, threshold: float, config: DetectorConfig
) -> tuple[tuple[Change, ...], tuple[int, ...]]:
    levels = np.log(np.array([statistics.median(values) for values in runs]))
    counts = [len(values) for values in runs]
    splits = sorted(_segment(levels, sigma, threshold, config), key=lambda split: split.index)
    bounds = [0, *(split.index for split in splits), len(levels)]
    changes: list[Change] = []
    for position, split in enumerate(splits):
        low, high = bounds[position], bounds[position + 2]
        before = levels[max(low, split.index - config.window) : split.index]
        after = levels[split.index : min(high, split.index + config.window)]
        changes.append(
            Change(
                index=split.index,
                before=float(np.exp(np.median(before))),
                after=float(np.exp(np.median(after))),
                change_pct=_pct(split.shift),
                z=split.z,
                p_value=_p_value(split.z),
                established=True,
                single_run_basis=False,
                runs_before=sum(counts[max(low, split.index - config.window) : split.index]),
                runs_after=sum(counts[split.index : min(high, split.index + config.window)]),
                kind="step",
            )
        )
    outliers: list[int] = []
    for low, high in itertools.pairwise(bounds):
        found, strays = _excursions(levels, runs, low, high, sigma, threshold, config)
        changes.extend(found)
        outliers.extend(strays)
    changes.sort(key=lambda change: change.index)
    return tuple(changes), tuple(sorted(outliers))


def _segment(levels: np.ndarray, sigma: float, threshold: float, config: DetectorConfig) -> list[_Split]:
    """Binary segmentation: split where the windowed shift is largest, while it is a change."""
    found: list[_Split] = []
    pending = [(0, len(levels))]
    while pending:
        low, high = pending.pop()
        split = _best_split(levels, low, high, sigma, config)
        if split is None or abs(split.z) < config.z_crit or abs(_pct(split.shift)) < threshold:
            continue
        placed = _place(levels, low, high, split, sigma, config)
        found.append(placed)
        pending.append((low, placed.index))
        pending.append((placed.index, high))
    return found


def _window_stats(
    levels: np.ndarray, low: int, high: int, index: int, sigma: float, window: int
) -> tuple[float, float]:
    before = levels[max(low, index - window) : index]
    after = levels[index : min(high, index + window)]
    shift = float(np.median(np.subtract.outer(after, before)))
    error = sigma * math.sqrt(_HL_VARIANCE_FACTOR * (1.0 / before.size + 1.0 / after.size))
    return shift, shift / error


def _best_split(
    levels: np.ndarray, low: int, high: int, sigma: float, config: DetectorConfig
) -> _Split | None:
    best: _Split | None = None
    for index in range(low + config.min_before, high - config.min_after + 1):
        shift, z = _window_stats(levels, low, high, index, sigma, config.window)
        if best is None or abs(z) > abs(best.z):
            best = _Split(index=index, z=z, shift=shift)
    return best


def _place(
    levels: np.ndarray, low: int, high: int, split: _Split, sigma: float, config: DetectorConfig
) -> _Split:
    """Move a split to the boundary that best separates the two levels around it."""
    start = max(low, split.index - config.window)
    stop = min(high, split.index + config.window)
    level_before = float(np.median(levels[start : split.index]))
    level_after = float(np.median(levels[split.index : stop]))
    first = max(low + config.min_before, split.index - config.refine_radius)
    last = min(high - config.min_after, split.index + config.refine_radius)
    best_index, best_cost = split.index, math.inf
    for index in range(first, last + 1):
        cost = float(
            np.abs(levels[start:index] - level_before).sum() + np.abs(levels[index:stop] - level_after).sum()
        )
        # Ties go to the split the windowed statistic chose.
        if cost < best_cost - 1e-12 or (
            abs(cost - best_cost) <= 1e-12 and abs(index - split.index) < abs(best_index - split.index)
        ):
            best_index, best_cost = index, cost
    if best_index == split.index:
        return split
    shift, z = _window_stats(levels, low, high, best_index, sigma, config.window)
    return _Split(index=best_index, z=z, shift=shift)


def _excursions(
    levels: np.ndarray,
    runs: list[tuple[float, ...]],
    low: int,
    high: int,
    sigma: float,
    threshold: float,
    config: DetectorConfig,
) -> tuple[list[Change], list[int]]:
    """Short departures from a segment's level: confirmed changes, suspects at the end, or outliers."""
    if high - low < 2:
        return [], []
    level = float(np.median(levels[low:high]))
    flagged = [
        index
        for index in range(low, high)
        if abs(_pct(float(levels[index]) - level)) >= threshold
        and abs(float(levels[index]) - level) * math.sqrt(len(runs[index])) / sigma >= config.z_crit / 2
    ]
    changes: list[Change] = []
    outliers: list[int] = []
    for start, stop in _groups(flagged, levels, level):
        shift = float(np.mean(levels[start:stop])) - level
        run_count = sum(len(runs[index]) for index in range(start, stop))
        rest = (high - low) - (stop - start)
        error = sigma * math.sqrt(1.0 / run_count + _HL_VARIANCE_FACTOR / max(rest, 1))
        z = shift / error
        if abs(z) < config.z_crit or abs(_pct(shift)) < threshold:
            outliers.extend(range(start, stop))
            continue
        reference = math.exp(level)
        replicated = any(
            _replicated(runs[index], reference, shift, threshold) for index in range(start, stop)
        )
        established = run_count >= config.min_after or replicated
        at_end = stop == len(levels)
        if not established and not at_end:
            outliers.extend(range(start, stop))
            continue
        if (start == low and low != 0) or (stop == high and high != len(levels)):
            continue  # it touches a step already reported: part of that step, not a change of its own
        after = math.exp(float(np.median(levels[start:stop])))
        changes.append(
            Change(
                index=start,
                before=reference,
                after=after,
                change_pct=_pct(shift),
                z=z,
                p_value=_p_value(z),
                established=established,
                single_run_basis=False,
                runs_before=sum(len(runs[index]) for index in range(max(low, start - config.window), start)),
                runs_after=run_count,
                kind="excursion" if established else "suspect",
            )
        )
        if established and not at_end and stop < high:
            back = float(levels[stop]) - float(np.mean(levels[start:stop]))
            changes.append(
                Change(
                    index=stop,
                    before=after,
                    after=math.exp(float(levels[stop])),
                    change_pct=_pct(back),
                    z=-z,
                    p_value=_p_value(z),
                    established=True,
                    single_run_basis=False,
                    runs_before=run_count,
                    runs_after=len(runs[stop]),
                    kind="excursion_end",
                )
            )
    return changes, outliers


def _groups(flagged: list[int], levels: np.ndarray, level: float) -> list[tuple[int, int]]:
    """Consecutive flagged commits on the same side of the level, as ``[start, stop)`` ranges."""
    groups: list[tuple[int, int]] = []
    for index in flagged:
        side = float(levels[index]) > level
        if groups and groups[-1][1] == index and (float(levels[groups[-1][0]]) > level) == side:
            groups[-1] = (groups[-1][0], index + 1)
        else:
            groups.append((index, index + 1))
    return groups
