"""Statistics of A/B comparisons run as interleaved rounds (pure functions over plain sequences).

A comparison measures a base and a head candidate in rounds, A B A B ..., each arm in a fresh
process. Pairing the two arms of a round cancels whatever moved both (a warmer node, another
tenant): the quantity of interest is the per-round log ratio ``ln(head / base)``.

With two rounds a paired t interval has one degree of freedom and is uselessly wide, so the round
variance is *moderated* (as limma does for microarrays): the spread seen in this comparison is
pooled with a prior spread from the series' history or an A/A calibration, weighted by their
degrees of freedom. Without a prior it is the plain paired t interval.

Verdicts compare the 95 % interval with the threshold: a regression is significantly slower and
at least the threshold by its estimate; "no change" means the whole interval lies within
± threshold; anything else is inconclusive and calls for more rounds (Pinpoint's "need more
data").
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as scipy_stats

from tracker.enums import Verdict

_POWER_80 = statistics.NormalDist().inv_cdf(0.80)
_MAD_TO_SD = 1.0 / statistics.NormalDist().inv_cdf(0.75)


@dataclass(frozen=True, slots=True)
class RoundValues:
    """One round of a comparison: the base arm's and the head arm's value (ms per step)."""

    base: float
    head: float


def without_most_extreme(rounds: Sequence[RoundValues], *, slower: bool) -> tuple[int, list[RoundValues]]:
    """The index of the round most in one direction (the highest head/base ratio when ``slower``, the
    lowest otherwise) and the other rounds, in order: what a call is judged again without, so that
    one bad run cannot make it (confirmations and PR comparisons alike)."""
    sign = 1.0 if slower else -1.0
    extreme = max(
        range(len(rounds)), key=lambda index: sign * math.log(rounds[index].head / rounds[index].base)
    )
    return extreme, [pair for index, pair in enumerate(rounds) if index != extreme]


@dataclass(frozen=True, slots=True)
class NoisePrior:
    """A prior for the per-arm run-to-run noise: percent, and the degrees of freedom it rests on."""

    noise_pct: float
    dof: int


@dataclass(frozen=True, slots=True)
class ComparisonStats:
    """What a set of rounds says about head vs base.

    ``change_pct`` is the geometric-mean change; ``ci_low_pct``/``ci_high_pct`` its interval
    (``None`` when there are no degrees of freedom); ``round_noise_pct`` is the per-arm noise the
    interval used.
    """

    rounds: int
    base_ms: float
    head_ms: float
    change_pct: float
    ci_low_pct: float | None
    ci_high_pct: float | None
    confidence: float
    dof: int
    round_noise_pct: float | None
    threshold_pct: float
    verdict: Verdict
    reason: str


def compare_rounds(
    rounds: Sequence[RoundValues],
    *,
    threshold_pct: float,
    prior: NoisePrior | None = None,
    confidence: float = 0.95,
) -> ComparisonStats:
    """Change, confidence interval and verdict of head vs base over paired rounds.

    Parameters
    ----------
    rounds
        Completed rounds (both arms measured), in the order they ran; at least one.
    threshold_pct
        The change (percent) that matters for this case on this hardware.
    prior
        Per-arm run-to-run noise known from history or calibration, pooled with the rounds'
        own spread; ``None`` uses the rounds alone.
    confidence
        Coverage of the interval.

    Returns
    -------
    ComparisonStats
        Estimate, interval and one of regression / improvement / no change / inconclusive.
    """
    _check_rounds(rounds, threshold_pct)
    ratios = [math.log(pair.head / pair.base) for pair in rounds]
    count = len(ratios)
    mean_ratio = statistics.fmean(ratios)
    base_ms = math.exp(statistics.fmean(math.log(pair.base) for pair in rounds))
    head_ms = math.exp(statistics.fmean(math.log(pair.head) for pair in rounds))
    sum_squares, dof = _moderated_squares(ratios, mean_ratio, prior)
    change = _pct(mean_ratio)
    if dof == 0:
        return _without_interval(count, base_ms, head_ms, change, threshold_pct, confidence)
    ratio_variance = sum_squares / dof
    half_width = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, dof)) * math.sqrt(ratio_variance / count)
    low, high = _pct(mean_ratio - half_width), _pct(mean_ratio + half_width)
    verdict, reason = _verdict(change, low, high, threshold_pct)
    return ComparisonStats(
        rounds=count,
        base_ms=base_ms,
        head_ms=head_ms,
        change_pct=change,
        ci_low_pct=low,
        ci_high_pct=high,
        confidence=confidence,
        dof=dof,
        round_noise_pct=math.sqrt(ratio_variance / 2.0) * 100.0,
        threshold_pct=threshold_pct,
        verdict=verdict,
        reason=reason,
    )


def _check_rounds(rounds: Sequence[RoundValues], threshold_pct: float) -> None:
    """Refuse no rounds, a threshold that is not positive, or values that are not positive and finite."""
    if not rounds:
        raise ValueError("a comparison needs at least one completed round")
    if threshold_pct <= 0:
        raise ValueError("threshold_pct must be positive")
    for pair in rounds:
        if not (pair.base > 0 and pair.head > 0 and math.isfinite(pair.base) and math.isfinite(pair.head)):
            raise ValueError("round values must be positive and finite")


def _moderated_squares(
    ratios: Sequence[float], mean_ratio: float, prior: NoisePrior | None
) -> tuple[float, int]:
    """The round ratios' sum of squares about their mean and its degrees of freedom, pooled with the prior's.

    The prior adds as many squares as its degrees of freedom, each the variance of a paired
    difference of single runs; without a prior (or one without degrees of freedom) the rounds alone.
    """
    sum_squares = sum((ratio - mean_ratio) ** 2 for ratio in ratios)
    dof = len(ratios) - 1
    if prior is not None and prior.dof > 0:
        # A paired difference of two single runs has twice a single run's variance.
        sum_squares += prior.dof * 2.0 * (prior.noise_pct / 100.0) ** 2
        dof += prior.dof
    return sum_squares, dof


def _without_interval(
    count: int, base_ms: float, head_ms: float, change: float, threshold_pct: float, confidence: float
) -> ComparisonStats:
    """The estimate alone, inconclusive: one round and no prior leave no degree of freedom."""
    return ComparisonStats(
        rounds=count,
        base_ms=base_ms,
        head_ms=head_ms,
        change_pct=change,
        ci_low_pct=None,
        ci_high_pct=None,
        confidence=confidence,
        dof=0,
        round_noise_pct=None,
        threshold_pct=threshold_pct,
        verdict=Verdict.INCONCLUSIVE,
        reason="one round and no noise estimate: no interval yet",
    )


def _pct(log_ratio: float) -> float:
    return (math.exp(log_ratio) - 1.0) * 100.0


def _verdict(change: float, low: float, high: float, threshold: float) -> tuple[Verdict, str]:
    interval = f"{change:+.2f} % [{low:+.2f}, {high:+.2f}]"
    if low > 0 and change >= threshold:
        return Verdict.REGRESSION, f"slower: {interval}, above the {threshold:g} % threshold"
    if high < 0 and change <= -threshold:
        return Verdict.IMPROVEMENT, f"faster: {interval}, beyond the {threshold:g} % threshold"
    if -threshold < low and high < threshold:
        return Verdict.NO_CHANGE, f"within ±{threshold:g} %: {interval}"
    return Verdict.INCONCLUSIVE, f"interval {interval} crosses ±{threshold:g} % or 0: more rounds needed"


def minimum_detectable_change_pct(
    round_noise_pct: float, rounds: int, dof: int, confidence: float = 0.95
) -> float:
    """The smallest change a comparison of ``rounds`` rounds finds with 80 % power.

    Parameters
    ----------
    round_noise_pct
        Per-arm run-to-run noise, percent.
    rounds
        Rounds in the comparison.
    dof
        Degrees of freedom of the interval.
    confidence
        Coverage of the interval.

    Returns
    -------
    float
        Change in percent.
    """
    if rounds < 1 or dof < 1:
        raise ValueError("need at least one round and one degree of freedom")
    ratio_sd = math.sqrt(2.0) * round_noise_pct / 100.0
    critical = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, dof))
    return _pct((critical + _POWER_80) * ratio_sd / math.sqrt(rounds))


@dataclass(frozen=True, slots=True)
class Calibration:
    """What an A/A comparison (a candidate against itself) says about the setup.

    ``false_verdict_rate`` maps a round count to the share of sub-comparisons of that many rounds
    (drawn from the A/A rounds) that called a regression or an improvement; ``mde_pct`` maps it to
    the smallest change detectable with 80 % power.
    """

    rounds: int
    round_noise_pct: float
    false_verdict_rate: dict[int, float]
    mde_pct: dict[int, float]
    subsamples: dict[int, int]
    outlier_rounds: tuple[int, ...] = ()


def calibrate_aa(
    rounds: Sequence[RoundValues],
    *,
    threshold_pct: float,
    round_counts: Sequence[int] = (2, 4, 8),
    max_subsamples: int = 200,
    seed: int = 0,
) -> Calibration:
    """Measure the false-verdict rate and detectable change from an A/A comparison.

    Parameters
    ----------
    rounds
        Rounds of a candidate compared with itself; at least two.
    threshold_pct
        The threshold verdicts are judged against.
    round_counts
        Comparison sizes to evaluate (those above ``len(rounds)`` are skipped).
    max_subsamples
        At most this many subsets of rounds per size (all of them when fewer exist).
    seed
        Seed for drawing subsets, so a calibration is reproducible.

    Returns
    -------
    Calibration
        Per-round noise, and per size the false-verdict rate and the detectable change.
    """
    if len(rounds) < 2:
        raise ValueError("an A/A calibration needs at least two rounds")
    ratios = [math.log(pair.head / pair.base) for pair in rounds]
    ratio_sd, outliers = _robust_spread(ratios)
    noise_pct = ratio_sd / math.sqrt(2.0) * 100.0
    rng = random.Random(seed)  # noqa: S311 - reproducible subsampling, not secrets
    false_rates: dict[int, float] = {}
    mde: dict[int, float] = {}
    drawn: dict[int, int] = {}
    for size in sorted(set(round_counts)):
        if size < 2 or size > len(rounds):
            continue
        subsets = _subsets(len(rounds), size, max_subsamples, rng)
        false_calls = sum(
            compare_rounds([rounds[index] for index in subset], threshold_pct=threshold_pct).verdict
            in (Verdict.REGRESSION, Verdict.IMPROVEMENT)
            for subset in subsets
        )
        false_rates[size] = false_calls / len(subsets)
        drawn[size] = len(subsets)
        mde[size] = minimum_detectable_change_pct(max(noise_pct, 1e-6), size, size - 1)
    return Calibration(
        rounds=len(rounds),
        round_noise_pct=noise_pct,
        outlier_rounds=outliers,
        false_verdict_rate=false_rates,
        mde_pct=mde,
        subsamples=drawn,
    )


def _robust_spread(ratios: list[float]) -> tuple[float, tuple[int, ...]]:
    """Standard deviation of the round ratios, robust to a bad round, and which rounds stood out.

    One slow process in a handful of rounds (a cold cache, a neighbour) would otherwise set the
    calibrated noise, and with it every later threshold. From three rounds on, the spread is the
    scaled median absolute deviation; rounds more than four of those from the median are named.
    """
    if len(ratios) < 3:
        return statistics.stdev(ratios), ()
    centre = statistics.median(ratios)
    mad = statistics.median(abs(ratio - centre) for ratio in ratios) * _MAD_TO_SD
    if mad <= 0:
        return statistics.stdev(ratios), ()
    outliers = tuple(index + 1 for index, ratio in enumerate(ratios) if abs(ratio - centre) > 4 * mad)
    return mad, outliers


def _subsets(total: int, size: int, limit: int, rng: random.Random) -> list[tuple[int, ...]]:
    if math.comb(total, size) <= limit:
        return list(itertools.combinations(range(total), size))
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < limit:
        chosen.add(tuple(sorted(rng.sample(range(total), size))))
    return sorted(chosen)
