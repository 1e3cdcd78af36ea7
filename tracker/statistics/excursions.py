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
  ``min_after`` runs or a confirming re-run hold it up; so is the newest commit alone, against the
  level just before it, when nothing else speaks for it (:func:`tail_suspect`).
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
    established = _established(series, (low, high), span, strong, deviation, shift=shift, reference=reference)
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
    end = _excursion_end(series, high, span, after=after) if established else None
    if end is not None:
        changes.append(end)
    return changes


def _established(
    series: SeriesLevels,
    segment: tuple[int, int],
    span: tuple[int, int],
    strong: list[int],
    deviation: FloatArray,
    *,
    shift: float,
    reference: float,
) -> bool:
    """Whether a departure counts as a change: measured often enough, and rare in its segment.

    Often enough is ``min_after`` runs of its ``strong`` commits, or a commit re-run whose every run
    stands apart from ``reference``; rare is what :func:`_rare` gives chance at most
    ``excursion_chance`` (at the series' end only one position could have shown it).
    """
    low, high = segment
    start, stop = span
    config = series.config
    replicated = any(
        runs_stand_apart(series.runs[index], reference, shift, log_shift_pct(series.threshold))
        for index in range(start, stop)
    )
    strong_runs = sum(len(series.runs[index]) for index in strong)
    positions = 1 if stop == len(series.levels) else high - low
    return (strong_runs >= config.min_after or replicated) and _rare(
        deviation, [index - low for index in strong], strong_runs, positions=positions
    ) <= config.excursion_chance


def _excursion_end(series: SeriesLevels, high: int, span: tuple[int, int], *, after: float) -> Change | None:
    """The return from an established excursion ``span`` to the level after it, when it reaches the threshold.

    ``after`` is the excursion's own level; ``None`` when no commit follows it in the segment or
    the return is too small to tell from noise.
    """
    start, stop = span
    levels, config = series.levels, series.config
    back_levels = levels[stop : min(high, stop + config.window)]
    if back_levels.size == 0:
        return None
    run_count = series.run_count(start, stop)
    back_level = float(np.median(back_levels))
    back = back_level - float(np.mean(levels[start:stop]))
    back_error = series.sigma * math.sqrt(1.0 / run_count + HL_VARIANCE_FACTOR / back_levels.size)
    back_z = back / back_error
    if not (abs(back_z) >= config.z_crit and series.reaches(back, back_error)):
        return None
    return Change(
        index=stop,
        before=after,
        after=math.exp(back_level),
        change_pct=log_shift_pct(back),
        z=back_z,
        p_value=two_sided_p(back_z),
        established=True,
        single_run_basis=False,
        runs_before=run_count,
        runs_after=series.run_count(stop, min(high, stop + config.window)),
        kind="excursion_end",
    )


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


def tail_suspect(series: SeriesLevels, changes: list[Change], outliers: set[int]) -> Change | None:
    """The newest commit against the level just before it, when nothing else speaks for it.

    Segments need ``min_after`` commits and excursions are judged against a wider level, so the
    newest run (a one-night regression, or the first night of a lasting one) can only be a suspect
    here. Compared with the last few commits (not reaching back across a change), it is a suspect
    for paired rounds to settle, raised at ``suspect_z`` against the *model's* threshold: a noisy
    series' own threshold (what a full window can tell from noise) would hide a 5 % one-night
    regression at 2 % noise, which paired rounds can still confirm. A suspect costs rounds, never
    an alert on its own. A newest commit whose compile counters changed (``series.causes``) is
    gated at ``cause_suspect_z`` instead: its shift must still reach the model's threshold.
    """
    levels, runs, config = series.levels, series.runs, series.config
    last = len(levels) - 1
    gate = series.for_suspects(caused=last in series.causes)
    if last < 1 or any(change.index >= last for change in changes):
        return None
    start = max([0, last - config.window, *(change.index for change in changes)])
    # The recent level: the commit before the newest, and those before it (up to a window) that
    # share its level (a level that moved without being recognised yet must not be mixed in). A
    # level from a few commits only would make the newest run's z too noisy to gate on.
    recent = [last - 1]
    for index in range(last - 2, start - 1, -1):
        if index in outliers:
            continue
        if abs(float(levels[index] - levels[last - 1])) > 2 * math.sqrt(2.0) * series.sigma:
            break
        recent.append(index)
    level = float(np.median(levels[recent]))
    shift = float(levels[last]) - level
    error = series.sigma * math.sqrt(1.0 / len(runs[last]) + HL_VARIANCE_FACTOR / len(recent))
    z = shift / error
    z_gate = config.cause_suspect_z if last in series.causes else config.suspect_z
    if abs(z) < z_gate or not gate.reaches(shift, error):
        return None
    # The commit just before must agree: a newest run at the level of its neighbour is that
    # neighbour's level going on (a change not yet recognised), not a change of its own.
    step = float(levels[last] - levels[last - 1])
    step_error = series.sigma * math.sqrt(1.0 / len(runs[last]) + 1.0 / len(runs[last - 1]))
    if (step > 0) != (shift > 0) or not gate.reaches(step, step_error):
        return None
    reference = math.exp(level)
    established = abs(z) >= config.z_crit and runs_stand_apart(
        runs[last], reference, shift, log_shift_pct(series.threshold)
    )
    return Change(
        index=last,
        before=reference,
        after=math.exp(float(levels[last])),
        change_pct=log_shift_pct(shift),
        z=z,
        p_value=two_sided_p(z),
        established=established,
        single_run_basis=False,
        runs_before=series.run_count(start, last),
        runs_after=len(runs[last]),
        kind="excursion" if established else "suspect",
    )
