"""Level shifts in a series by binary segmentation (pure functions over a :class:`SeriesLevels`).

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
"""

from __future__ import annotations

import math

import numpy as np

from tracker.statistics.detector import HL_VARIANCE_FACTOR, SeriesLevels, Split

# Deviations beyond this many sigma count no more when a boundary is placed.
_PLACE_CAP_SIGMA = 3.0


def segment_levels(series: SeriesLevels) -> list[Split]:
    """Binary segmentation: split where the windowed shift is largest, while it is a change.

    Windows stop at the segment's ends, but a split found early may have looked across a change
    found later (a short excursion dilutes or fakes a shift). So once no segment splits any more,
    every split is measured again between its final neighbours, and the weakest one that no
    longer is a change is dropped, until all stand (the merge step of Otava's E-divisive).
    """
    found: list[Split] = []
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


def _prune(series: SeriesLevels, splits: list[Split]) -> list[Split]:
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


def _short_sides_consistent(series: SeriesLevels, low: int, index: int, high: int) -> bool:
    """A short segment beside a split must be a level, not a few stray nights that happen to cluster."""
    short = series.config.window // 2
    return (index - low >= short or series.consistent(slice(low, index))) and (
        high - index >= short or series.consistent(slice(index, high))
    )


def _is_change(series: SeriesLevels, split: Split) -> bool:
    return abs(split.z) >= series.config.z_crit and series.reaches(split.shift, split.error)


def _window_stats(series: SeriesLevels, low: int, high: int, index: int) -> Split:
    window = series.config.window
    before = series.levels[max(low, index - window) : index]
    after = series.levels[index : min(high, index + window)]
    shift = float(np.median(np.subtract.outer(after, before)))
    error = series.sigma * math.sqrt(HL_VARIANCE_FACTOR * (1.0 / before.size + 1.0 / after.size))
    return Split(index=index, z=shift / error, shift=shift, error=error)


def _best_split(series: SeriesLevels, low: int, high: int) -> Split | None:
    best: Split | None = None
    for index in range(low + series.config.min_before, high - series.config.min_after + 1):
        split = _window_stats(series, low, high, index)
        if best is None or abs(split.z) > abs(best.z):
            best = split
    return best


def _place(series: SeriesLevels, low: int, high: int, split: Split) -> Split:
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


def _best_boundary(series: SeriesLevels, low: int, high: int, index: int) -> int:
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
