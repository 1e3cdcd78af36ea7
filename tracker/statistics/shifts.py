"""Did a quantity move between two groups of runs? Medians and a robust spread (pure functions).

A diagnosis compares a handful of runs before a change with a handful after it, quantity by
quantity (a stage's time, step 0, peak memory). The groups are small and may hold one odd run, so
each side is summarised by its median and the noise by the spread of ``ln(value)`` within each side
(:func:`robust_log_spread`), pooled: a shift counts only when it stands out of that noise by ``z``
standard errors *and* is at least ``min_pct`` (and ``min_abs``) large. With one run a side there is
no spread to measure, and the minimum alone decides.

A spread measured on two to four runs a side is itself uncertain, so on noise alone (no minimum)
``z = 3`` calls a shift in about 1–7 % of such pairs of groups (seeded trials, 1 % noise); the
minimums are what keeps a diagnosis quiet there: with a 2 % minimum at 1 % noise, 0.2–1.3 %.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Scaled MAD: for normal data, MAD × 1.4826 estimates the standard deviation...
MAD_TO_SD = 1.4826
# ... in large samples; in small ones it runs low, and these factors (Croux & Rousseeuw 1992) undo
# that for n = 5..9 (n / (n - 0.8) beyond).
_SMALL_SAMPLE = {5: 1.206, 6: 1.200, 7: 1.140, 8: 1.129, 9: 1.107}
ROBUST_FROM = 5  # group size from which the spread is the MAD (below: the standard deviation)
# The standard error of a median is about √(π/2) times that of a mean.
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2.0)


@dataclass(frozen=True, slots=True)
class Shift:
    """How a quantity moved from one group to the other.

    ``noise_pct`` is the smallest relative change the groups' own spread lets stand out (``z``
    standard errors, percent), ``None`` when neither side has two values to measure a spread.
    """

    before: float
    after: float
    change_pct: float
    noise_pct: float | None
    beyond_noise: bool

    @property
    def delta(self) -> float:
        """``after - before``, in the quantity's unit."""
        return self.after - self.before


def robust_log_spread(values: Sequence[float]) -> float | None:
    """The spread of ``ln(value)`` within one group; ``None`` for fewer than two values.

    From :data:`ROBUST_FROM` values on, the scaled median absolute deviation, corrected for the
    small sample, so one odd run does not set it; below, the sample standard deviation: the MAD of
    two or three values is too unstable (it can be nearly zero when two runs happen to agree), and
    with so few runs an odd one cannot be told apart anyway (it widens the spread, which errs on
    the side of saying nothing).

    Parameters
    ----------
    values
        Positive values of one group.

    Returns
    -------
    float or None
        An estimate of the standard deviation of ``ln(value)`` (a fraction, not percent).
    """
    size = len(values)
    if size < 2:
        return None
    logs = [math.log(value) for value in values]
    if size < ROBUST_FROM:
        return statistics.stdev(logs)
    centre = statistics.median(logs)
    correction = _SMALL_SAMPLE.get(size, size / (size - 0.8))
    return statistics.median(abs(value - centre) for value in logs) * MAD_TO_SD * correction


def median_shift(
    before: Sequence[float],
    after: Sequence[float],
    *,
    min_pct: float,
    min_abs: float = 0.0,
    z: float = 3.0,
) -> Shift | None:
    """Compare the medians of two groups against their robust spread.

    Parameters
    ----------
    before, after
        The quantity in each run of the two groups (positive values; others are ignored).
    min_pct
        The smallest relative change that counts, percent, whatever the noise.
    min_abs
        The smallest absolute change that counts, in the quantity's unit.
    z
        How many standard errors of the difference of medians a change must stand out by.

    Returns
    -------
    Shift or None
        The medians, the change in percent, the noise it was judged against and the verdict;
        ``None`` when either group has no positive value.
    """
    left = [value for value in before if value > 0 and math.isfinite(value)]
    right = [value for value in after if value > 0 and math.isfinite(value)]
    if not left or not right:
        return None
    low, high = statistics.median(left), statistics.median(right)
    change = (high / low - 1.0) * 100.0
    noise = _noise_pct(left, right, z)
    needed = max(min_pct, noise or 0.0)
    beyond = abs(change) >= needed and abs(high - low) >= min_abs
    return Shift(before=low, after=high, change_pct=change, noise_pct=noise, beyond_noise=beyond)


def _noise_pct(left: Sequence[float], right: Sequence[float], z: float) -> float | None:
    """``z`` standard errors of the difference of the two medians, as a relative change in percent."""
    spreads = [
        (len(group) - 1, spread)
        for group in (left, right)
        if (spread := robust_log_spread(group)) is not None
    ]
    if not spreads:
        return None
    dof = sum(weight for weight, _ in spreads)
    sigma = math.sqrt(sum(weight * spread**2 for weight, spread in spreads) / dof)
    standard_error = MEDIAN_EFFICIENCY * sigma * math.sqrt(1.0 / len(left) + 1.0 / len(right))
    return (math.exp(z * standard_error) - 1.0) * 100.0
