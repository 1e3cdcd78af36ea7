"""Run-to-run noise of a series, estimated robustly (pure functions over plain sequences).

Nightly values move for reasons that are not code: clocks, thermals, neighbours on the node. How
far they move from one run to the next is what a change must stand out against. The estimate
works on logarithms, so it is relative (a coefficient of variation) and a 2 % change reads the
same on a 30 ms and a 300 ms step.

Why successive differences: the standard deviation of a series that holds a real step change is
inflated by the step itself, and so is a median absolute deviation around one median. The
differences between neighbours are not: a step adds a single large difference, which the median
of absolute differences ignores. Replicate runs of one commit (confirmation re-runs, A/A rounds)
add their own differences, which hold no code change at all.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

# For d = x1 - x2 with x ~ N(mu, sigma²): median(|d|) = Φ⁻¹(0.75) · √2 · sigma.
_MEDIAN_ABS_DIFF_PER_SIGMA = statistics.NormalDist().inv_cdf(0.75) * math.sqrt(2.0)


@dataclass(frozen=True, slots=True)
class NoiseEstimate:
    """Relative run-to-run noise of a series.

    ``cv_pct`` is the standard deviation of ``ln(value)`` in percent (for small values the same as
    the coefficient of variation); ``differences`` says how many differences it rests on;
    ``floored`` is true when the measured noise was below ``floor_pct`` and the floor applies.
    """

    cv_pct: float
    differences: int
    floored: bool
    source: str = "history"  # "history", "history+calibration" or "calibration"

    @property
    def sigma(self) -> float:
        """The noise as a standard deviation of ``ln(value)`` (a fraction, not percent)."""
        return self.cv_pct / 100.0


def run_to_run_noise(
    commits: Sequence[Sequence[float]],
    *,
    lookback: int = 100,
    min_differences: int = 5,
    floor_pct: float = 0.05,
    breaks: Collection[int] = (),
) -> NoiseEstimate | None:
    """Estimate the run-to-run noise of a series from its recent history.

    Parameters
    ----------
    commits
        Per commit in commit order, the values of its successful runs (each sequence non-empty,
        values positive). A commit with several runs contributes the differences between them.
    lookback
        Only the newest ``lookback`` commits are used, so the estimate follows the series.
    min_differences
        Fewer differences than this give no estimate (``None``): too little history.
    floor_pct
        The estimate never goes below this (identical values would otherwise make any change
        infinitely significant); the result says when the floor applied.
    breaks
        Positions ``i`` (in ``commits``) where a change is known to start: the difference between
        commits ``i - 1`` and ``i`` is left out, so known changes do not count as noise. This is
        how detection refines its estimate once it has found the changes.

    Returns
    -------
    NoiseEstimate or None
        Standard deviation of ``ln(value)`` between runs, in percent, or ``None`` when the history
        is too short.
    """
    offset = max(len(commits) - lookback, 0)
    skipped = {position - offset for position in breaks}
    recent = [list(values) for values in commits[offset:]]
    if any(not values for values in recent):
        raise ValueError("every commit needs at least one value")
    for values in recent:
        if any(value <= 0 or not math.isfinite(value) for value in values):
            raise ValueError("noise needs positive, finite values")
    differences: list[float] = []
    for values in recent:
        logs = [math.log(value) for value in values]
        differences.extend(abs(b - a) for a, b in itertools.pairwise(logs))
    levels = [math.log(statistics.median(values)) for values in recent]
    differences.extend(
        abs(levels[index] - levels[index - 1]) for index in range(1, len(levels)) if index not in skipped
    )
    if len(differences) < min_differences:
        return None
    sigma_pct = statistics.median(differences) / _MEDIAN_ABS_DIFF_PER_SIGMA * 100.0
    floored = sigma_pct < floor_pct
    return NoiseEstimate(cv_pct=max(sigma_pct, floor_pct), differences=len(differences), floored=floored)


def pooled_noise(
    history: NoiseEstimate | None, prior_pct: float | None, prior_dof: int
) -> NoiseEstimate | None:
    """Pool the series' noise with a calibrated prior, weighted by their degrees of freedom.

    Parameters
    ----------
    history
        The series' own estimate, or ``None`` when its history is too short.
    prior_pct
        Per-run noise an A/A calibration measured, percent (``None``: no calibration).
    prior_dof
        Degrees of freedom of the prior (rounds - 1).

    Returns
    -------
    NoiseEstimate or None
        The pooled estimate (``source`` says what it rests on), or ``None`` with neither.
    """
    if prior_pct is None or prior_dof < 1:
        return history
    if history is None:
        return NoiseEstimate(cv_pct=prior_pct, differences=0, floored=False, source="calibration")
    variance = (history.differences * history.cv_pct**2 + prior_dof * prior_pct**2) / (
        history.differences + prior_dof
    )
    return NoiseEstimate(
        cv_pct=max(math.sqrt(variance), history.cv_pct if history.floored else 0.0),
        differences=history.differences,
        floored=history.floored,
        source="history+calibration",
    )
