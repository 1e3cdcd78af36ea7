"""What change detection shares: its settings, the changes it reports, and a series as it sees it.

* Values are compared as logarithms, so changes are relative and the noise is a coefficient of
  variation (:mod:`tracker.statistics.noise`, robust to the step changes it is looking for).
* **Reaching the threshold** allows for the estimate's own error: a shift counts when it is within
  ``threshold_margin_z`` standard errors of the threshold, and at most ``threshold_margin_share``
  of it below (a true 2 % change is estimated below 2 % half the time). ``threshold_margin_z=0``
  restores the strict comparison.
* Commits meant to share one level **agree** when their median absolute deviation stays within a
  couple of sigma: bad nights scatter, a real level does not.

These names are shared only by the detector's own modules
(:mod:`tracker.statistics.changepoints`, :mod:`tracker.statistics.segmentation`, :mod:`tracker.statistics.excursions`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

# Variance of the Hodges–Lehmann shift relative to the difference of means, for normal data.
HL_VARIANCE_FACTOR = math.pi / 3.0
_NORMAL = statistics.NormalDist()
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
    short excursion is no longer believed (see :mod:`tracker.statistics.excursions`). ``suspect_z`` is the
    gate of the newest commit as a *suspect* against the level just before it, measured against
    the model's threshold rather than the noise-raised one: paired rounds settle every suspect, so
    a suspect may be raised on weaker evidence than an established change (``z_crit``).
    ``cause_suspect_z`` is that gate for a newest commit whose compile counters changed (graph
    breaks, graphs, frames compiled, recompiles) or whose seeded output changed, 0: a mechanism
    that moved is evidence of its own, so any shift that reaches the model's threshold goes to
    paired rounds, however noisy the series.
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
    suspect_z: float = 2.5
    cause_suspect_z: float = 0.0


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


def log_shift_pct(log_shift: float) -> float:
    return (math.exp(log_shift) - 1.0) * 100.0


def two_sided_p(z: float) -> float:
    return 2.0 * (1.0 - _NORMAL.cdf(abs(z)))


def runs_stand_apart(values: tuple[float, ...], reference: float, shift: float, threshold: float) -> bool:
    """Whether a commit was measured more than once and every run stands apart in one direction."""
    if len(values) < 2:
        return False
    return all(
        abs(log_shift_pct(math.log(value / reference))) >= threshold and (value > reference) == (shift > 0)
        for value in values
    )


@dataclass(frozen=True, slots=True)
class Split:
    index: int
    z: float
    shift: float
    error: float


@dataclass(frozen=True, slots=True)
class SeriesLevels:
    """One series as the noise-based detector sees it: log levels, runs, noise and threshold."""

    levels: FloatArray
    runs: list[tuple[float, ...]]
    sigma: float
    threshold: float  # the threshold as a shift of ln(value)
    config: DetectorConfig
    model_threshold: float | None = None  # the model's own threshold (ln), when the noise raised it
    causes: frozenset[int] = frozenset()  # commits whose compile counters differ from the one before
    cause_threshold: float | None = None  # the model's threshold alone (ln), for those commits

    def for_suspects(self, *, caused: bool = False) -> SeriesLevels:
        """The series judged against the model's threshold, for suspects that paired rounds settle.

        A suspect's shift must reach that threshold itself (no margin for its error): paired rounds
        confirm only a bound beyond the threshold, so a newest run short of it would cost rounds
        for a change they could almost never confirm. ``caused``: the commit's compile counters
        moved, and the model's threshold applies even where an A/A calibration raised the floor
        (a calibration of a few rounds in a noisy hour must not hide a mechanism that moved).
        """
        model = self.cause_threshold if caused and self.cause_threshold is not None else self.model_threshold
        threshold = self.threshold if model is None else min(self.threshold, model)
        return replace(self, threshold=threshold, config=replace(self.config, threshold_margin_z=0.0))

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
