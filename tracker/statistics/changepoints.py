"""Change points in a nightly series (pure functions over plain sequences).

A series is given commit by commit, oldest first, each commit with the values of its successful
runs. The detector answers: where did the level change, by how much, how sure is it, and which
changes are still only suspects that a re-run must confirm.

How it decides (and why), module by module:

* :mod:`tracker.statistics.detector`: values are compared as logarithms against the series' noise
  (a coefficient of variation), and a shift reaches the threshold allowing for its own error.
* :mod:`tracker.statistics.segmentation`: **level shifts** by binary segmentation over windowed
  Hodges–Lehmann shifts, each split placed exactly and re-measured between its final neighbours.
* :mod:`tracker.statistics.excursions`: **short excursions** are changes only when measured more than once,
  consistent and rare; otherwise outliers. The newest commits at a new level are a *suspect*.
* Here: with too little history for a noise estimate, consecutive commits are compared directly
  and every change at least the threshold is reported with ``single_run_basis = True``.
* Here: the threshold that applies is the model's, or what the noise allows when that is larger:
  the smallest shift a full window on each side can tell from noise at ``z_crit``.
* Here: the first noise estimate counted the changes it then found as noise; it is estimated
  again with the established changes as breaks, and detection runs again when that is quieter.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from tracker.statistics.detector import (
    HL_VARIANCE_FACTOR,
    Change,
    DetectorConfig,
    SeriesLevels,
    log_shift_pct,
    runs_stand_apart,
    two_sided_p,
)
from tracker.statistics.excursions import find_excursions, tail_suspect
from tracker.statistics.noise import NoiseEstimate, pooled_noise, run_to_run_noise
from tracker.statistics.segmentation import segment_levels

__all__ = ["Change", "Detection", "DetectorConfig", "detect_changes", "noise_threshold_pct"]

# What one detection pass finds: the changes, the outlier commits and the threshold that applied.
_Found = tuple[tuple[Change, ...], tuple[int, ...], float]


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
    se = noise_pct / 100.0 * math.sqrt(HL_VARIANCE_FACTOR * 2.0 / config.window)
    return (math.exp(config.z_crit * se) - 1.0) * 100.0


# Long on purpose: the docstring documents each parameter; the body is a dozen lines.
def detect_changes(
    commits: Sequence[Sequence[float]],
    *,
    threshold_pct: float,
    config: DetectorConfig | None = None,
    noise_floor_from_calibration_pct: float | None = None,
    prior_noise_pct: float | None = None,
    prior_noise_dof: int = 0,
    known_breaks: Collection[int] = (),
    causes: Collection[int] = (),
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
    known_breaks
        Positions (in ``commits``) where a change is already known to start: confirmed alerts,
        with their culprit where bisection named one. The noise estimate leaves the difference
        across each out from the start. A young series with several real changes would otherwise
        count them as noise (three steps in seven commits make most of its differences) and raise
        its threshold past the next change.
    causes
        Positions where a mechanism moved: compile counters that differ from the commit before (all
        runs of both agree), or a seeded output that changed (an output alert). The newest commit
        there is a suspect on weaker evidence (``DetectorConfig.cause_suspect_z``).

    Returns
    -------
    Detection
        Changes in commit order (established ones and suspects), outlier commits, the noise
        estimate and the threshold that applied.
    """
    config = config or DetectorConfig()
    runs = _checked_runs(commits, threshold_pct)
    known = {position for position in known_breaks if 0 < position < len(runs)}
    moved = frozenset(position for position in causes if 0 < position < len(runs))
    floors = [threshold_pct]
    if noise_floor_from_calibration_pct is not None:
        floors.append(noise_floor_from_calibration_pct)
    prior = (prior_noise_pct, prior_noise_dof)
    noise, (changes, outliers, threshold) = _detect(
        runs, floors, config, known=known, prior=prior, causes=moved
    )
    return Detection(
        changes=changes,
        outliers=outliers,
        noise=noise,
        threshold_pct=threshold,
        model_threshold_pct=threshold_pct,
        noise_threshold_pct=_reported_noise_threshold(noise, noise_floor_from_calibration_pct, config),
        config=config,
    )


def _checked_runs(commits: Sequence[Sequence[float]], threshold_pct: float) -> list[tuple[float, ...]]:
    """Each commit's values as floats, once the inputs are checked.

    The threshold must be positive, and every commit must have values, all positive and finite.
    """
    if threshold_pct <= 0:
        raise ValueError("threshold_pct must be positive")
    runs = [tuple(float(value) for value in values) for values in commits]
    for position, values in enumerate(runs):
        if not values:
            raise ValueError(f"commit {position} has no value; leave it out")
        if any(value <= 0 or not math.isfinite(value) for value in values):
            raise ValueError(f"commit {position} has a value that is not positive and finite")
    return runs


def _detect(
    runs: list[tuple[float, ...]],
    floors: list[float],
    config: DetectorConfig,
    *,
    known: set[int],
    prior: tuple[float | None, int],
    causes: frozenset[int] = frozenset(),
) -> tuple[NoiseEstimate | None, _Found]:
    """The noise estimate, and the changes, outliers and threshold found with it.

    Without a noise estimate consecutive commits are compared directly. With one, the changes it
    finds are left out of a second estimate (the first counted them as noise), and detection runs
    again when that is quieter. ``prior`` is the calibration's noise (percent) and its degrees of
    freedom.
    """
    history, noise = _noise(runs, config, known, prior)
    if noise is None:
        threshold = max(floors)
        return None, (tuple(_single_run_changes(runs, threshold)), (), threshold)
    changes, outliers, threshold = _detect_with_noise(runs, noise, floors, config, causes)
    if history is not None and changes:
        # The first estimate counted the found changes as noise; estimate again without them.
        _, refined = _noise(runs, config, _breaks(changes) | known, prior)
        if refined is not None and refined.cv_pct < noise.cv_pct:
            return refined, _detect_with_noise(runs, refined, floors, config, causes)
    return noise, (changes, outliers, threshold)


def _noise(
    runs: list[tuple[float, ...]], config: DetectorConfig, breaks: set[int], prior: tuple[float | None, int]
) -> tuple[NoiseEstimate | None, NoiseEstimate | None]:
    """The series' own run-to-run noise (without the differences across ``breaks``), and with the prior."""
    history = run_to_run_noise(
        runs,
        lookback=config.lookback,
        min_differences=config.min_noise_differences,
        floor_pct=config.noise_floor_pct,
        breaks=breaks,
    )
    prior_noise_pct, prior_noise_dof = prior
    return history, pooled_noise(history, prior_noise_pct, prior_noise_dof)


def _reported_noise_threshold(
    noise: NoiseEstimate | None, calibration_floor_pct: float | None, config: DetectorConfig
) -> float | None:
    """The threshold the noise imposes: the series' own, never below the calibration's floor."""
    noise_threshold = None
    if noise is not None:
        noise_threshold = noise_threshold_pct(noise.cv_pct, config)
    if calibration_floor_pct is not None:
        noise_threshold = max(noise_threshold or 0.0, calibration_floor_pct)
    return noise_threshold


def _detect_with_noise(
    runs: list[tuple[float, ...]],
    noise: NoiseEstimate,
    floors: list[float],
    config: DetectorConfig,
    causes: frozenset[int] = frozenset(),
) -> _Found:
    threshold = max([*floors, noise_threshold_pct(noise.cv_pct, config)])
    changes, outliers = _with_noise(
        runs,
        noise.sigma,
        threshold,
        config,
        suspect_threshold=max(floors),
        causes=causes,
        cause_threshold=floors[0],
    )
    return changes, outliers, threshold


def _breaks(changes: Sequence[Change]) -> set[int]:
    """Where the level changes for good: established changes only.

    Outliers stay in: a series that often strays (two modes, bad nights) is that noisy.
    """
    return {change.index for change in changes if change.established}


def _single_run_changes(runs: list[tuple[float, ...]], threshold: float) -> list[Change]:
    """Without a noise estimate: each commit against the one before it."""
    levels = [statistics.median(values) for values in runs]
    changes = []
    for index in range(1, len(levels)):
        shift = math.log(levels[index] / levels[index - 1])
        if abs(log_shift_pct(shift)) >= threshold:
            changes.append(
                Change(
                    index=index,
                    before=levels[index - 1],
                    after=levels[index],
                    change_pct=log_shift_pct(shift),
                    z=None,
                    p_value=None,
                    established=runs_stand_apart(runs[index], levels[index - 1], shift, threshold),
                    single_run_basis=True,
                    runs_before=len(runs[index - 1]),
                    runs_after=len(runs[index]),
                    kind="single",
                )
            )
    return changes


def _with_noise(
    runs: list[tuple[float, ...]],
    sigma: float,
    threshold: float,
    config: DetectorConfig,
    *,
    suspect_threshold: float,
    causes: frozenset[int] = frozenset(),
    cause_threshold: float | None = None,
) -> tuple[tuple[Change, ...], tuple[int, ...]]:
    series = SeriesLevels(
        levels=np.log(np.array([statistics.median(values) for values in runs])),
        runs=runs,
        sigma=sigma,
        threshold=math.log1p(threshold / 100.0),
        config=config,
        model_threshold=math.log1p(suspect_threshold / 100.0),
        causes=causes,
        cause_threshold=None if cause_threshold is None else math.log1p(cause_threshold / 100.0),
    )
    levels, window = series.levels, config.window
    splits = sorted(segment_levels(series), key=lambda split: split.index)
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
                change_pct=log_shift_pct(split.shift),
                z=split.z,
                p_value=two_sided_p(split.z),
                established=True,
                single_run_basis=False,
                runs_before=series.run_count(before.start, before.stop),
                runs_after=series.run_count(after.start, after.stop),
                kind="step",
            )
        )
    outliers: list[int] = []
    for low, high in itertools.pairwise(bounds):
        found, strays = find_excursions(series, low, high)
        changes.extend(found)
        outliers.extend(strays)
    changes.sort(key=lambda change: change.index)
    changes = _relevel(series, changes)
    tail = tail_suspect(series, changes, set(outliers))
    if tail is not None:
        changes.append(tail)
        outliers = [index for index in outliers if index != tail.index]
    return tuple(changes), tuple(sorted(outliers))


def _relevel(series: SeriesLevels, changes: list[Change]) -> list[Change]:
    """Restate each change against the levels right next to it, bounded by its neighbouring changes.

    A step found across a short-lived level (a regression half fixed by the next commit, then a
    speed-up) would otherwise be measured from the older level. A change that turns round or
    shrinks below half the threshold against its neighbours was an artefact of that older level
    and is dropped; the others keep their z and kind.
    """
    levels, window = series.levels, series.config.window
    kept: list[Change] = []
    for position, change in enumerate(changes):
        previous = changes[position - 1].index if position > 0 else 0
        following = changes[position + 1].index if position + 1 < len(changes) else len(levels)
        before = levels[max(previous, change.index - window) : change.index]
        after = levels[change.index : min(following, change.index + window)]
        if before.size == 0 or after.size == 0:
            kept.append(change)
            continue
        shift = float(np.median(after) - np.median(before))
        error = series.sigma * math.sqrt(1.0 / after.size + 1.0 / before.size)
        if (shift > 0) != (change.change_pct > 0) or abs(shift) < series.threshold / 2:
            continue
        if change.kind != "step" and (
            abs(shift / error) < series.config.z_crit or not series.reaches(shift, error)
        ):
            continue  # an excursion measured against a level its neighbours do not share
        if abs(shift - math.log1p(change.change_pct / 100.0)) <= 2 * error:
            kept.append(change)  # its own estimate stands: the neighbours tell the same story
            continue
        kept.append(
            replace(
                change,
                before=float(np.exp(np.median(before))),
                after=float(np.exp(np.median(after))),
                change_pct=log_shift_pct(shift),
            )
        )
    return kept
