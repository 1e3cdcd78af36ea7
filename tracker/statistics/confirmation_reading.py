"""Paired rounds read against a confirmation's two questions, and what more rounds could settle.

:func:`read_rounds` says where the rounds of a suspect stand: *is there a change* (the one-sided
bound nearest zero at ``change_confidence`` clears the dead zone), *is it big enough* (the estimate
reaches ``size_share`` of the threshold) and *is the threshold ruled out* (the far one-sided bound
at ``confidence`` falls short of it). :func:`rounds_needed` plans rounds from the rounds' own noise
and :func:`futile` says when even the cap could not settle the question.
:mod:`tracker.statistics.confirmation` turns these into the judgement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as scipy_stats

from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues, compare_rounds
from tracker.statistics.paired_rounds import ConfirmationPolicy

__all__ = [
    "FUTILITY_FROM_ROUNDS",
    "Reading",
    "bounded",
    "directional_bounds",
    "futile",
    "read_rounds",
    "rounds_needed",
]


@dataclass(frozen=True, slots=True)
class Reading:
    """The paired rounds read against the two questions in the suspect's direction.

    ``stats`` holds the estimate and the interval whose ends are the one-sided bounds at
    ``confidence`` (what pages show); ``toward`` is the estimate in the suspect's direction (log),
    ``near_change`` the bound nearest zero at ``change_confidence`` (log, ``None`` without an
    interval) and ``ratio_sd`` a round's log-ratio standard deviation (``None`` without one).
    """

    stats: ComparisonStats
    interval: str
    toward: float
    near_change: float | None
    far: float | None
    ratio_sd: float | None
    is_change: bool
    big_enough: bool
    rules_out_threshold: bool

    @property
    def confirms(self) -> bool:
        return self.is_change and self.big_enough


def read_rounds(
    rounds: Sequence[RoundValues],
    regression: bool,
    threshold_pct: float,
    prior: NoisePrior | None,
    policy: ConfirmationPolicy,
) -> Reading:
    """Where ``rounds`` stand on the two questions."""
    stats = bounded(rounds, threshold_pct, prior, policy.confidence)
    sign = 1.0 if regression else -1.0
    toward = sign * math.log1p(stats.change_pct / 100.0)
    threshold = math.log1p(threshold_pct / 100.0)
    if stats.ci_low_pct is None or stats.ci_high_pct is None:
        return Reading(
            stats,
            f"{stats.change_pct:+.2f} % (no interval yet)",
            toward,
            None,
            None,
            None,
            is_change=False,
            big_enough=False,
            rules_out_threshold=False,
        )
    change = directional_bounds(bounded(rounds, threshold_pct, prior, policy.change_confidence), sign)
    shown = directional_bounds(stats, sign)
    if change is None or shown is None:  # the same degrees of freedom: both have an interval, or neither
        raise AssertionError("an interval at one confidence but not at the other")
    near_change, far = change[0], shown[1]
    ratio_sd = None
    if stats.round_noise_pct is not None:
        ratio_sd = math.sqrt(2.0) * stats.round_noise_pct / 100.0
    return Reading(
        stats,
        f"{stats.change_pct:+.2f} % [{stats.ci_low_pct:+.2f}, {stats.ci_high_pct:+.2f}]",
        toward,
        near_change,
        far,
        ratio_sd,
        is_change=near_change >= policy.dead_zone_share * threshold,
        big_enough=toward >= policy.size_share * threshold,
        rules_out_threshold=far < threshold,
    )


def rounds_needed(ratio_sd: float, threshold_pct: float, policy: ConfirmationPolicy, prior_dof: int) -> int:
    """Paired rounds that confirm a change of exactly the threshold with probability ``policy.power``.

    A change of the threshold clears the dead zone with that power when the standard error of the
    mean log ratio is at most ``(1 - dead_zone_share) * threshold / (t + z)``, with ``t`` the
    quantile at those rounds' degrees of freedom (theirs and the prior's ``prior_dof``);
    ``ratio_sd`` is one round's log-ratio standard deviation. At most :data:`MAX_PLANNED_ROUNDS`.
    """
    gap = (1.0 - policy.dead_zone_share) * math.log1p(threshold_pct / 100.0)
    power = float(scipy_stats.norm.ppf(policy.power))
    rounds = policy.initial_rounds
    while rounds < MAX_PLANNED_ROUNDS:
        quantile = float(scipy_stats.t.ppf(policy.change_confidence, rounds - 1 + prior_dof)) + power
        if (quantile * ratio_sd / gap) ** 2 <= rounds:
            break
        rounds += 1
    return rounds


# Planning stops here: a suspect that needs more is far beyond any cap an operator would set.
MAX_PLANNED_ROUNDS = 256


# Futility is judged from this many rounds on: two rounds' spread says too little about the rest.
FUTILITY_FROM_ROUNDS = 4


def futile(reading: Reading, threshold_pct: float, scheduled: int, policy: ConfirmationPolicy) -> str:
    """Why even the cap's rounds could not settle it (empty when they still could).

    The bounds are projected to the cap at today's estimate: their half-widths shrink with the
    square root of the rounds and with the t quantiles' degrees of freedom. When at the cap the
    estimate would still neither clear the dead zone (with the size the rule asks) nor rule the
    threshold out, more rounds would only spend runner time.
    """
    if scheduled < FUTILITY_FROM_ROUNDS or scheduled >= policy.max_rounds or reading.ratio_sd is None:
        return ""
    stats = reading.stats
    if stats.dof < 1 or stats.rounds < 2:
        return ""
    more = policy.max_rounds - scheduled
    error_cap = reading.ratio_sd / math.sqrt(stats.rounds + more)
    dof_cap = stats.dof + more
    threshold = math.log1p(threshold_pct / 100.0)
    near_cap = reading.toward - float(scipy_stats.t.ppf(policy.change_confidence, dof_cap)) * error_cap
    far_cap = reading.toward + float(scipy_stats.t.ppf(policy.confidence, dof_cap)) * error_cap
    confirmable = (
        near_cap >= policy.dead_zone_share * threshold and reading.toward >= policy.size_share * threshold
    )
    refutable = far_cap < threshold
    if confirmable or refutable:
        return ""
    return (
        f"{policy.max_rounds} rounds would still leave about ±{math.expm1(far_cap - reading.toward) * 100:.1f} % "
        f"around an estimate of {math.expm1(reading.toward) * 100:.2f} %"
    )


def directional_bounds(stats: ComparisonStats, sign: float) -> tuple[float, float] | None:
    """The interval's ends as log changes in the suspect's direction: (nearest zero, farthest)."""
    if stats.ci_low_pct is None or stats.ci_high_pct is None:
        return None
    ends = sorted((sign * math.log1p(stats.ci_low_pct / 100.0), sign * math.log1p(stats.ci_high_pct / 100.0)))
    return ends[0], ends[1]


def bounded(
    rounds: Sequence[RoundValues], threshold_pct: float, prior: NoisePrior | None, one_sided: float
) -> ComparisonStats:
    """The paired estimate with the interval whose ends are one-sided bounds at ``one_sided``."""
    return compare_rounds(rounds, threshold_pct=threshold_pct, prior=prior, confidence=2.0 * one_sided - 1.0)
