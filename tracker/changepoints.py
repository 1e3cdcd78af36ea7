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
  separates the two levels (absolute deviation, capped at a few sigma so that a bad night next to
  the step cannot pull it over) wins, repeated until it stays put, so the flagged commit is the
  first bad one, not a neighbour.
* Once no segment splits any more, every split is **measured again between its final
  neighbours** and the weakest one that no longer holds is dropped, until all hold (Otava's merge
  step): a split found early may have looked across a change found later.
* **Reaching the threshold** allows for the estimate's own error: a shift counts when it is within
  ``threshold_margin_z`` standard errors of the threshold, and at most ``threshold_margin_share``
  of it below (a true 2 % change is estimated below 2 % half the time). ``threshold_margin_z=0``
  restores the strict comparison.
* **Short excursions** (departures from the *local* level, a running median that follows slow
  drift, and back) are what a bad night looks like, and also what a regression fixed soon after
  looks like. They count as changes only when measured more than once: ``min_after`` runs in all
  (one quieter commit may sit inside), or a commit re-run (a confirmation) whose every run stands
  apart; when their commits agree with each other within the noise (bad nights scatter); and when
  the series seldom strays that far otherwise (``excursion_chance``: a series with two modes shows
  runs of far commits by chance). Otherwise they are reported as outliers. The return to the level
  is a change of its own when it, too, reaches the threshold.
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
import numpy.typing as npt

from tracker.noise import NoiseEstimate, pooled_noise, run_to_run_noise

# Variance of the Hodges–Lehmann shift relative to the difference of means, for normal data.
_HL_VARIANCE_FACTOR = math.pi / 3.0
_NORMAL = statistics.NormalDist()
# Deviations beyond this many sigma count no more when a boundary is placed.
_PLACE_CAP_SIGMA = 3.0
# An excursion goes on across this many commits that stray less (noise inside a real excursion).
_EXCURSION_GAP = 1
# A short level's commits agree when their median absolute deviation is at most this many sigma
# (normal data exceed it less than 0.5 % of the time for 2–10 commits; bad nights far more often).
_CONSISTENT_MAD_SIGMA = 2.0

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """Tuning of :func:`detect_changes`; the defaults are what ``benchmarks/detection`` measured best.

    ``threshold_margin_z`` and ``threshold_margin_share`` say how far below the threshold an
    estimate may fall and still count (its standard errors, and a share of the threshold at most);
    ``excursion_chance`` is how many look-alike departures chance may be expected to give before a
    short excursion is no longer believed (see the module docstring).
    """

    window: int = 20
    min_before: int = 3
    min_after: int = 3
    z_crit: float = 4.0
    refine_radius: int = 3
    lookback: int = 100
    min_noise_differences: int = 5
    noise_floor_pct: float = 0.05
    threshold_margin_z: float = 1.645
    threshold_margin_share: float = 0.15
    excursion_chance: float = 0.05


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
    prior_noise_pct: float | None = None,
    prior_noise_dof: int = 0,
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
    prior_noise_pct
        Per-run noise an A/A calibration measured, percent. It is pooled with the series' own
        estimate (weighted by degrees of freedom), and stands in for it while the history is too
        short for one, so a young series is judged against measured noise, not single runs.
    prior_noise_dof
        Degrees of freedom of that prior (calibration rounds - 1).

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
    history = run_to_run_noise(
        runs,
        lookback=config.lookback,
        min_differences=config.min_noise_differences,
        floor_pct=config.noise_floor_pct,
    )
    noise = pooled_noise(history, prior_noise_pct, prior_noise_dof)
    floors = [threshold_pct]
    if noise_floor_from_calibration_pct is not None:
        floors.append(noise_floor_from_calibration_pct)
    if noise is None:
        threshold = max(floors)
        changes: tuple[Change, ...] = tuple(_single_run_changes(runs, threshold))
        outliers: tuple[int, ...] = ()
    else:
        changes, outliers, threshold = _detect_with_noise(runs, noise, floors, config)
        if history is not None and changes:
            # The first estimate counted the found changes as noise; estimate again without them.
            refined_history = run_to_run_noise(
                runs,
                lookback=config.lookback,
                min_differences=config.min_noise_differences,
                floor_pct=config.noise_floor_pct,
                breaks=_breaks(changes),
            )
            refined = pooled_noise(refined_history, prior_noise_pct, prior_noise_dof)
            if refined is not None and refined.cv_pct < noise.cv_pct:
                noise = refined
                changes, outliers, threshold = _detect_with_noise(runs, noise, floors, config)
    noise_threshold = None
    if noise is not None:
        noise_threshold = noise_threshold_pct(noise.cv_pct, config)
    if noise_floor_from_calibration_pct is not None:
        noise_threshold = max(noise_threshold or 0.0, noise_floor_from_calibration_pct)
    return Detection(
        changes=changes,
        outliers=outliers,
        noise=noise,
        threshold_pct=threshold,
        model_threshold_pct=threshold_pct,
        noise_threshold_pct=noise_threshold,
        config=config,
    )


def _detect_with_noise(
    runs: list[tuple[float, ...]], noise: NoiseEstimate, floors: list[float], config: DetectorConfig
) -> tuple[tuple[Change, ...], tuple[int, ...], float]:
    threshold = max([*floors, noise_threshold_pct(noise.cv_pct, config)])
    changes, outliers = _with_noise(runs, noise.sigma, threshold, config)
    return changes, outliers, threshold


def _breaks(changes: Sequence[Change]) -> set[int]:
    """Where the level changes for good: established changes only.

    Outliers stay in: a series that often strays (two modes, bad nights) is that noisy.
    """
    return {change.index for change in changes if change.established}


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
    error: float


@dataclass(frozen=True, slots=True)
class _Series:
    """One series as the noise-based detector sees it: log levels, runs, noise and threshold."""

    levels: FloatArray
    runs: list[tuple[float, ...]]
    sigma: float
    threshold: float  # the threshold as a shift of ln(value)
    config: DetectorConfig

    def reaches(self, shift: float, error: float, *, capped: bool = True) -> bool:
        """Whether a shift reaches the threshold, allowing ``threshold_margin_z`` of its own error
        (at most ``threshold_margin_share`` of the threshold unless ``capped`` is false)."""
        margin = self.config.threshold_margin_z * error
        if capped:
            margin = min(margin, self.config.threshold_margin_share * self.threshold)
        return abs(shift) + margin >= self.threshold

    def consistent(self, indices: Sequence[int] | slice) -> bool:
        """Whether commits meant to share one level agree with each other within the noise."""
        values = self.levels[indices]
        if values.size < 2:
            return True
        spread = float(np.median(np.abs(values - np.median(values))))
        return spread <= _CONSISTENT_MAD_SIGMA * self.sigma

    def run_count(self, start: int, stop: int) -> int:
        return sum(len(self.runs[index]) for index in range(start, stop))


def _with_noise(
    runs: list[tuple[float, ...]], sigma: float, threshold: float, config: DetectorConfig
) -> tuple[tuple[Change, ...], tuple[int, ...]]:
    series = _Series(
        levels=np.log(np.array([statistics.median(values) for values in runs])),
        runs=runs,
        sigma=sigma,
        threshold=math.log1p(threshold / 100.0),
        config=config,
    )
    levels, window = series.levels, config.window
    splits = sorted(_segment(series), key=lambda split: split.index)
    bounds = [0, *(split.index for split in splits), len(levels)]
    changes: list[Change] = []
    for position, split in enumerate(splits):
        low, high = bounds[position], bounds[position + 2]
        before = slice(max(low, split.index - window), split.index)
        after = slice(split.index, min(high, split.index + window))
        changes.append(
            Change(
                index=split.index,
                before=float(np.exp(np.median(levels[before]))),
                after=float(np.exp(np.median(levels[after]))),
                change_pct=_pct(split.shift),
                z=split.z,
                p_value=_p_value(split.z),
                established=True,
                single_run_basis=False,
                runs_before=series.run_count(before.start, before.stop),
                runs_after=series.run_count(after.start, after.stop),
                kind="step",
            )
        )
    outliers: list[int] = []
    for low, high in itertools.pairwise(bounds):
        found, strays = _excursions(series, low, high)
        changes.extend(found)
        outliers.extend(strays)
    changes.sort(key=lambda change: change.index)
    return tuple(changes), tuple(sorted(outliers))


def _segment(series: _Series) -> list[_Split]:
    """Binary segmentation: split where the windowed shift is largest, while it is a change.

    Windows stop at the segment's ends, but a split found early may have looked across a change
    found later (a short excursion dilutes or fakes a shift). So once no segment splits any more,
    every split is measured again between its final neighbours, and the weakest one that no
    longer is a change is dropped, until all stand (the merge step of Otava's E-divisive).
    """
    found: list[_Split] = []
    pending = [(0, len(series.levels))]
    while pending:
        low, high = pending.pop()
        split = _best_split(series, low, high)
        if split is None or not _is_change(series, split):
            continue
        placed = _place(series, low, high, split)
        too_short = (
            placed.index - low < series.config.min_before or high - placed.index < series.config.min_after
        )
        if too_short or not _is_change(series, placed):
            continue
        found.append(placed)
        pending.append((low, placed.index))
        pending.append((placed.index, high))
    return _prune(series, sorted(found, key=lambda split: split.index))


def _prune(series: _Series, splits: list[_Split]) -> list[_Split]:
    """Re-measure each split between its neighbours; drop the weakest failing one until none fails."""
    while splits:
        bounds = [0, *(split.index for split in splits), len(series.levels)]
        measured = [
            _window_stats(series, bounds[position], bounds[position + 2], split.index)
            for position, split in enumerate(splits)
        ]
        failing = [
            position
            for position, split in enumerate(measured)
            if not _is_change(series, split)
            or not _short_sides_consistent(series, bounds[position], split.index, bounds[position + 2])
        ]
        if not failing:
            return measured
        del splits[min(failing, key=lambda position: abs(measured[position].z))]
    return splits


def _short_sides_consistent(series: _Series, low: int, index: int, high: int) -> bool:
    """A short segment beside a split must be a level, not a few stray nights that happen to cluster."""
    short = series.config.window // 2
    return (index - low >= short or series.consistent(slice(low, index))) and (
        high - index >= short or series.consistent(slice(index, high))
    )


def _is_change(series: _Series, split: _Split) -> bool:
    return abs(split.z) >= series.config.z_crit and series.reaches(split.shift, split.error)


def _window_stats(series: _Series, low: int, high: int, index: int) -> _Split:
    window = series.config.window
    before = series.levels[max(low, index - window) : index]
    after = series.levels[index : min(high, index + window)]
    shift = float(np.median(np.subtract.outer(after, before)))
    error = series.sigma * math.sqrt(_HL_VARIANCE_FACTOR * (1.0 / before.size + 1.0 / after.size))
    return _Split(index=index, z=shift / error, shift=shift, error=error)


def _best_split(series: _Series, low: int, high: int) -> _Split | None:
    best: _Split | None = None
    for index in range(low + series.config.min_before, high - series.config.min_after + 1):
        split = _window_stats(series, low, high, index)
        if best is None or abs(split.z) > abs(best.z):
            best = split
    return best


def _place(series: _Series, low: int, high: int, split: _Split) -> _Split:
    """Move a split to the boundary that best separates the two levels around it.

    The windowed statistic peaks wherever both windows are full, which near another change or a
    series end can be a few commits off a large step; so the search is repeated from each new
    boundary (``refine_radius`` at a time) until the best boundary stays where it is.
    """
    current = split
    for _ in range(max(1, series.config.window // max(1, series.config.refine_radius))):
        index = _best_boundary(series, low, high, current.index)
        if index == current.index:
            break
        current = _window_stats(series, low, high, index)
    return current


def _best_boundary(series: _Series, low: int, high: int, index: int) -> int:
    """The boundary within ``refine_radius`` of ``index`` that fits two levels best (capped absolute deviation)."""
    levels, config = series.levels, series.config
    start = max(low, index - config.window)
    stop = min(high, index + config.window)
    level_before = float(np.median(levels[start:index]))
    level_after = float(np.median(levels[index:stop]))
    # The boundary may land closer to the segment's ends than a split may be searched for; a split
    # placed there is then too new (or too short) to stand, rather than reported a commit early.
    first = max(low + 1, index - config.refine_radius)
    last = min(high - 1, index + config.refine_radius)
    # Deviations are capped at a few sigma: a bad night next to the step must not pull it over.
    cap = _PLACE_CAP_SIGMA * series.sigma
    best_index, best_cost = index, math.inf
    for candidate in range(first, last + 1):
        cost = float(
            np.minimum(np.abs(levels[start:candidate] - level_before), cap).sum()
            + np.minimum(np.abs(levels[candidate:stop] - level_after), cap).sum()
        )
        # Ties go to the boundary the search started from.
        if cost < best_cost - 1e-12 or (
            abs(cost - best_cost) <= 1e-12 and abs(candidate - index) < abs(best_index - index)
        ):
            best_index, best_cost = candidate, cost
    return best_index


def _rolling_median(values: FloatArray, half_width: int) -> FloatArray:
    """Centred running median (windows shrink at the ends): the local level, following slow drift."""
    return np.array(
        [
            np.median(values[max(0, index - half_width) : index + half_width + 1])
            for index in range(values.size)
        ]
    )


def _excursions(series: _Series, low: int, high: int) -> tuple[list[Change], list[int]]:
    """Short departures from a segment's local level: confirmed changes, suspects at the end, or outliers."""
    if high - low < 2:
        return [], []
    levels, sigma, config = series.levels, series.sigma, series.config
    deviation = levels[low:high] - _rolling_median(levels[low:high], config.window)
    flagged = [
        index
        for index in range(low, high)
        if series.reaches(
            float(deviation[index - low]), sigma / math.sqrt(len(series.runs[index])), capped=False
        )
        and abs(float(deviation[index - low])) * math.sqrt(len(series.runs[index])) / sigma
        >= config.z_crit / 2
    ]
    flagged_set = set(flagged)
    changes: list[Change] = []
    outliers: list[int] = []
    for start, stop in _groups(flagged, deviation, low):
        strong = [index for index in range(start, stop) if index in flagged_set]
        found = _excursion(series, low, high, (start, stop), strong, deviation)
        if found is None:
            outliers.extend(range(start, stop))
        elif found:
            changes.extend(found)
    return changes, outliers


def _excursion(
    series: _Series,
    low: int,
    high: int,
    span: tuple[int, int],
    strong: list[int],
    deviation: FloatArray,
) -> list[Change] | None:
    """One departure ``span = [start, stop)``: its changes, ``[]`` when a step explains it, ``None`` for outliers.

    ``strong`` are the commits of the span that stray on their own; only their runs count towards
    ``min_after`` and the rarity test (a quieter commit bridged into the span does not).
    """
    start, stop = span
    levels, config = series.levels, series.config
    window = config.window
    around = np.concatenate(
        (levels[max(low, start - window) : start], levels[stop : min(high, stop + window)])
    )
    if around.size == 0:
        return None
    level = float(np.median(around))
    run_count = series.run_count(start, stop)
    shift = float(np.mean(levels[start:stop])) - level
    error = series.sigma * math.sqrt(1.0 / run_count + _HL_VARIANCE_FACTOR / around.size)
    z = shift / error
    if abs(z) < config.z_crit or not series.reaches(shift, error) or not series.consistent(strong):
        return None
    at_end = stop == len(levels)
    reference = math.exp(level)
    replicated = any(
        _replicated(series.runs[index], reference, shift, _pct(series.threshold))
        for index in range(start, stop)
    )
    strong_runs = sum(len(series.runs[index]) for index in strong)
    established = (strong_runs >= config.min_after or replicated) and _rare(
        deviation, [index - low for index in strong], strong_runs, positions=1 if at_end else high - low
    ) <= config.excursion_chance
    if not established and not at_end:
        return None
    if (start == low and low != 0) or (stop == high and high != len(levels)):
        return []  # it touches a step already reported: part of that step, not a change of its own
    after = math.exp(float(np.median(levels[start:stop])))
    changes = [
        Change(
            index=start,
            before=reference,
            after=after,
            change_pct=_pct(shift),
            z=z,
            p_value=_p_value(z),
            established=established,
            single_run_basis=False,
            runs_before=series.run_count(max(low, start - window), start),
            runs_after=run_count,
            kind="excursion" if established else "suspect",
        )
    ]
    back_levels = levels[stop : min(high, stop + window)]
    if not established or back_levels.size == 0:
        return changes
    back_level = float(np.median(back_levels))
    back = back_level - float(np.mean(levels[start:stop]))
    back_error = series.sigma * math.sqrt(1.0 / run_count + _HL_VARIANCE_FACTOR / back_levels.size)
    back_z = back / back_error
    if abs(back_z) >= config.z_crit and series.reaches(back, back_error):
        changes.append(
            Change(
                index=stop,
                before=after,
                after=math.exp(back_level),
                change_pct=_pct(back),
                z=back_z,
                p_value=_p_value(back_z),
                established=True,
                single_run_basis=False,
                runs_before=run_count,
                runs_after=series.run_count(stop, min(high, stop + window)),
                kind="excursion_end",
            )
        )
    return changes


def _rare(deviation: FloatArray, strong: list[int], run_count: int, positions: int) -> float:
    """How many departures like this one chance would give: the segment's other commits that stray
    as far in the same direction, as a share ``f``, make ``positions × f ** run_count``.

    A series whose runs often land a few percent away (two clock modes, a noisy neighbour) shows
    runs of such commits by chance; a series that seldom strays does not.
    """
    part = deviation[strong]
    direction = 1.0 if float(part.mean()) > 0 else -1.0
    weakest = float(np.min(direction * part))
    others = np.delete(deviation, strong)
    if others.size == 0:
        return 0.0
    share = float(np.count_nonzero(direction * others >= weakest)) / others.size
    return positions * share**run_count


def _groups(flagged: list[int], deviation: FloatArray, low: int) -> list[tuple[int, int]]:
    """Flagged commits on the same side of the local level, as ``[start, stop)`` ranges.

    A range goes on across up to ``_EXCURSION_GAP`` unflagged commits on the same side, so that
    one quieter night inside a real excursion does not cut it in two.
    """
    groups: list[tuple[int, int]] = []
    for index in flagged:
        side = float(deviation[index - low]) > 0
        if groups and (float(deviation[groups[-1][0] - low]) > 0) == side:
            start, stop = groups[-1]
            between = deviation[stop - low : index - low]
            if index - stop <= _EXCURSION_GAP and all((float(value) > 0) == side for value in between):
                groups[-1] = (start, index + 1)
                continue
        groups.append((index, index + 1))
    return groups
