"""Short departures from a segment's local level: changes, suspects, or outliers.

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
"""

from __future__ import annotations

import math

import numpy as np

from tracker.statistics.detector import (
    HL_VARIANCE_FACTOR,
    Change,
    FloatArray,
    SeriesLevels,
    log_shift_pct,
    runs_stand_apart,
    two_sided_p,
)

# An excursion goes on across this many commits that stray less (noise inside a real excursion).
_EXCURSION_GAP = 1


def _rolling_median(values: FloatArray, half_width: int) -> FloatArray:
    """Centred running median (windows shrink at the ends): the local level, following slow drift."""
    return np.array(
        [
            np.median(values[max(0, index - half_width) : index + half_width + 1])
            for index in range(values.size)
        ]
    )


def find_excursions(series: SeriesLevels, low: int, high: int) -> tuple[list[Change], list[int]]:
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
    series: SeriesLevels,
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
    if start == 0:
        return []  # the series' first commits have no level before them: a change is later, if any
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
    error = series.sigma * math.sqrt(1.0 / run_count + HL_VARIANCE_FACTOR / around.size)
    z = shift / error
    if abs(z) < config.z_crit or not series.reaches(shift, error) or not series.consistent(strong):
        return None
    at_end = stop == len(levels)
    reference = math.exp(level)
    replicated = any(
        runs_stand_apart(series.runs[index], reference, shift, log_shift_pct(series.threshold))
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
            change_pct=log_shift_pct(shift),
            z=z,
            p_value=two_sided_p(z),
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
    back_error = series.sigma * math.sqrt(1.0 / run_count + HL_VARIANCE_FACTOR / back_levels.size)
    back_z = back / back_error
    if abs(back_z) >= config.z_crit and series.reaches(back, back_error):
        changes.append(
            Change(
                index=stop,
                before=after,
                after=math.exp(back_level),
                change_pct=log_shift_pct(back),
                z=back_z,
                p_value=two_sided_p(back_z),
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
