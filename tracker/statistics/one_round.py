"""A PR comparison's call must not rest on one round.

A paired round holds two fresh processes; now and then one of them is slow for a reason that has
nothing to do with the code (a bad process, a neighbour, a GPU clocking down). With a noise prior
keeping the interval narrow, two rounds are enough for :func:`tracker.statistics.ab.compare_rounds`
to call a change, and one such round can carry a neutral pull request across the threshold on its
own: the quiet demo of 2026-12-05 called ``#102`` (a change that runs no code in the compile case)
"+3.50 % [+0.50, +6.59], slower" from two rounds. Confirmations have long asked that their call
survive without the round most in its direction (:mod:`tracker.statistics.confirmation`); this asks
the same of a comparison's regression or improvement: judged again without that round, the interval
must still exclude zero in the same direction. When it does not, the verdict is inconclusive and the
comparison runs more rounds (up to its cap). A single usable round decides nothing either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tracker.enums import Verdict
from tracker.statistics.ab import (
    ComparisonStats,
    NoisePrior,
    RoundValues,
    compare_rounds,
    without_most_extreme,
)
from tracker.statistics.paired_rounds import ConfirmationPolicy

MORE_ROUNDS = ": more rounds needed"  # the suffix a comparison at its cap drops
DEAD_ZONE_SHARE = ConfirmationPolicy().dead_zone_share


def held_without_extreme_round(
    rounds: Sequence[RoundValues],
    stats: ComparisonStats,
    *,
    threshold_pct: float,
    prior: NoisePrior | None,
) -> ComparisonStats:
    """``stats`` when its call holds without the round most in its direction, else inconclusive.

    Parameters
    ----------
    rounds
        The usable rounds ``stats`` was computed from, in the order they ran.
    stats
        :func:`compare_rounds` of ``rounds``.
    threshold_pct, prior
        As ``stats`` was computed with.

    Returns
    -------
    ComparisonStats
        ``stats`` unchanged for no change, inconclusive, or a call that holds; otherwise the same
        numbers with verdict inconclusive and a reason that names the round.
    """
    if stats.verdict not in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
        return stats
    way = "slower" if stats.verdict is Verdict.REGRESSION else "faster"
    interval = _interval(stats)
    if len(rounds) < 2:
        return _inconclusive(stats, f"{interval} {way} from a single round, which decides nothing")
    sign = 1.0 if stats.verdict is Verdict.REGRESSION else -1.0
    extreme, others = without_most_extreme(rounds, slower=sign > 0)
    rest = compare_rounds(others, threshold_pct=threshold_pct, prior=prior, confidence=stats.confidence)
    if _holds(rest, sign, threshold_pct):
        return stats
    return _inconclusive(
        stats,
        f"{interval} {way} only with round {extreme + 1}; without it {_interval(rest)}",
    )


def _holds(rest: ComparisonStats, sign: float, threshold_pct: float) -> bool:
    """Whether the other rounds still show a change on the ``sign`` side of zero.

    Their interval must exclude zero. Without a prior one round left has no interval; the full
    interval already carried the spread, so that round's own estimate must then clear the dead zone
    confirmations use (a quarter of the threshold, ``ConfirmationPolicy.dead_zone_share``).
    """
    if rest.ci_low_pct is None or rest.ci_high_pct is None:
        return sign * rest.change_pct >= DEAD_ZONE_SHARE * threshold_pct
    return rest.ci_low_pct > 0 if sign > 0 else rest.ci_high_pct < 0


def _interval(stats: ComparisonStats) -> str:
    if stats.ci_low_pct is None or stats.ci_high_pct is None:
        return f"{stats.change_pct:+.2f} %"
    return f"{stats.change_pct:+.2f} % [{stats.ci_low_pct:+.2f}, {stats.ci_high_pct:+.2f}]"


def _inconclusive(stats: ComparisonStats, why: str) -> ComparisonStats:
    return dataclasses.replace(stats, verdict=Verdict.INCONCLUSIVE, reason=f"{why}{MORE_ROUNDS}")
