"""The confirmation judgement: whether paired rounds confirm a suspected change, refute it, or need more.

:func:`judge_confirmation` reads the paired interval of a suspect's last good (base) and first bad
(head) commits (:func:`tracker.statistics.ab.compare_rounds`) as one-sided bounds at 95 %, because
the question is directional. **Confirmed** only when the bound nearest zero lies beyond the
threshold in the suspect's direction, with or without the round most in that direction (one bad
run never confirms); **refuted** when the far bound lies short of the threshold (the rounds rule
out a change that large); otherwise more rounds (2 → 4 → 8 → 16), then **too noisy**: never
confirmed, and said early when even the cap could not settle it. Rounds with an interfered run are
set aside first and the noise prior counts as at most four degrees of freedom
(:mod:`tracker.statistics.paired_rounds`); drift during the rounds cancels out because the arms
alternate. The service (:mod:`tracker.detection.confirmation`) and the detection benchmark
(``benchmarks/detection``) both call it, so they score and act on exactly the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import stats as scipy_stats

from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues, compare_rounds
from tracker.statistics.paired_rounds import ConfirmationPolicy, SetAside, set_aside_interfered

__all__ = ["ConfirmationJudgement", "ConfirmationOutcome", "judge_confirmation"]


class ConfirmationOutcome(StrEnum):
    """How paired rounds judged a suspect."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    MORE_ROUNDS = "more_rounds"
    TOO_NOISY = "too_noisy"


@dataclass(frozen=True, slots=True)
class ConfirmationJudgement:
    """What a confirmation's rounds say so far.

    ``rounds_wanted`` is how many rounds should exist in all (more than scheduled asks for more);
    ``stats`` the paired estimate and interval (``None`` before the first usable round).
    """

    outcome: ConfirmationOutcome
    rounds_wanted: int
    stats: ComparisonStats | None
    reason: str


def judge_confirmation(
    rounds: Sequence[RoundValues],
    *,
    regression: bool,
    threshold_pct: float,
    scheduled: int,
    prior: NoisePrior | None = None,
    policy: ConfirmationPolicy | None = None,
) -> ConfirmationJudgement:
    """Judge a suspect from the paired rounds measured so far (base = last good, head = first bad).

    The question is directional (is the first bad commit at least the threshold slower, or faster?),
    so each end of the interval is read as a one-sided bound at ``policy.confidence``:

    * **confirmed** when the bound nearest zero lies at or beyond the threshold in the suspect's
      direction, *and still does without the round most in that direction* (one bad run must not
      confirm: a round far from the others costs more rounds instead); never on a single round;
    * **refuted** when the far bound lies short of the threshold (a change that large is ruled out);
    * otherwise more rounds, doubling up to the cap, then **too noisy** (never confirmed).

    Parameters
    ----------
    rounds
        Usable rounds (both arms measured), in the order they ran.
    regression
        The suspect's direction: ``True`` for slower, ``False`` for faster.
    threshold_pct
        The model's threshold (percent) on this hardware: what counts as a change.
    scheduled
        Rounds that exist so far (ended or not); the judgement asks for more only beyond these.
    prior
        Per-run noise known from calibration or history, pooled with the rounds' own spread; it
        counts as at most ``policy.max_prior_dof`` degrees of freedom, whatever it rests on.
    policy
        Round counts, the bounds' confidence and the prior's weight.

    Returns
    -------
    ConfirmationJudgement
        Confirmed, refuted, more rounds (and how many in all), or too noisy at the cap. ``stats``
        is the paired estimate over every round with the interval whose ends are the one-sided
        bounds (a two-sided ``2 * confidence - 1`` interval, 90 % by default).
    """
    policy = policy or ConfirmationPolicy()
    if threshold_pct <= 0:
        raise ValueError("threshold_pct must be positive")
    if not rounds:
        return _without_rounds(scheduled, policy)
    screened = set_aside_interfered(rounds, noise_pct=prior.noise_pct if prior is not None else None)
    if len(screened.kept) < 2:
        return _too_few_rounds(screened, scheduled, policy)
    return _judge_rounds(
        screened,
        regression=regression,
        threshold_pct=threshold_pct,
        scheduled=scheduled,
        prior=policy.capped(prior),
        policy=policy,
    )


def _without_rounds(scheduled: int, policy: ConfirmationPolicy) -> ConfirmationJudgement:
    """The judgement before the first round, or when no round scheduled measured anything."""
    if scheduled == 0:
        return ConfirmationJudgement(
            ConfirmationOutcome.MORE_ROUNDS, policy.initial_rounds, None, "no round yet"
        )
    # Every arm failed: builds or runs that fail do not start working with more rounds.
    return ConfirmationJudgement(
        ConfirmationOutcome.TOO_NOISY,
        scheduled,
        None,
        f"no usable round in {scheduled}: nothing measured",
    )


def _too_few_rounds(screened: SetAside, scheduled: int, policy: ConfirmationPolicy) -> ConfirmationJudgement:
    """The judgement when fewer than two rounds are left: more rounds, or too noisy at the cap.

    One round decides nothing, either way: it may be the interfered one left in.
    """
    kept = len(screened.kept)
    few = f"{kept} usable round{'s' if kept != 1 else ''}{screened.note()}"
    if scheduled < policy.max_rounds:
        grown = policy.grown(scheduled)
        return ConfirmationJudgement(
            ConfirmationOutcome.MORE_ROUNDS, grown, None, f"{few}: running {grown} rounds in all"
        )
    return ConfirmationJudgement(
        ConfirmationOutcome.TOO_NOISY, scheduled, None, f"unconfirmed, too noisy: {few} at the cap"
    )


def _judge_rounds(
    screened: SetAside,
    *,
    regression: bool,
    threshold_pct: float,
    scheduled: int,
    prior: NoisePrior | None,
    policy: ConfirmationPolicy,
) -> ConfirmationJudgement:
    """The judgement from two rounds or more (those ``screened`` kept; ``prior`` already capped).

    Confirmed or refuted when the bounds settle it, else :func:`_unsettled` says what comes next.
    """
    stats = _bounded(screened.kept, threshold_pct, prior, policy)
    reading = _read_bounds(stats, screened.kept, regression, threshold_pct, prior, policy)
    way = "slower" if regression else "faster"
    count = f"{stats.rounds} paired round{'s' if stats.rounds != 1 else ''}{screened.note()}"
    level = f"{policy.confidence * 100:g} %"
    if reading.beyond and not reading.held_by:
        return ConfirmationJudgement(
            ConfirmationOutcome.CONFIRMED,
            scheduled,
            stats,
            f"confirmed by {count}: {reading.interval}, {way} beyond the {threshold_pct:g} % threshold "
            f"({level} one-sided bound), with or without its most {way} round",
        )
    if reading.short:
        return ConfirmationJudgement(
            ConfirmationOutcome.REFUTED,
            scheduled,
            stats,
            f"refuted by {count}: {reading.interval} rules out a change of {threshold_pct:g} % {way} "
            f"({level} one-sided bound)",
        )
    return _unsettled(
        stats,
        reading,
        count,
        regression=regression,
        threshold_pct=threshold_pct,
        scheduled=scheduled,
        policy=policy,
    )


@dataclass(frozen=True, slots=True)
class _Reading:
    """The paired interval read against the threshold in the suspect's direction.

    ``interval`` is the estimate and interval as the reason states them; ``beyond`` whether the
    bound nearest zero reaches the threshold, ``short`` whether the far bound falls short of it;
    ``held_by`` why reaching it rests on one round (empty when it does not, or when not ``beyond``).
    """

    interval: str
    beyond: bool
    short: bool
    held_by: str


def _read_bounds(
    stats: ComparisonStats,
    rounds: Sequence[RoundValues],
    regression: bool,
    threshold_pct: float,
    prior: NoisePrior | None,
    policy: ConfirmationPolicy,
) -> _Reading:
    """Where the one-sided bounds of ``stats`` lie against the threshold (none before an interval)."""
    bounds = _directional_bounds(stats, regression)
    if bounds is None:
        return _Reading(f"{stats.change_pct:+.2f} % (no interval yet)", beyond=False, short=False, held_by="")
    near, far = bounds
    beyond = near >= threshold_pct
    return _Reading(
        f"{stats.change_pct:+.2f} % [{stats.ci_low_pct:+.2f}, {stats.ci_high_pct:+.2f}]",
        beyond=beyond,
        short=far < threshold_pct,
        held_by=_held_by_one_round(rounds, regression, threshold_pct, prior, policy) if beyond else "",
    )


def _unsettled(
    stats: ComparisonStats,
    reading: _Reading,
    count: str,
    *,
    regression: bool,
    threshold_pct: float,
    scheduled: int,
    policy: ConfirmationPolicy,
) -> ConfirmationJudgement:
    """Neither confirmed nor refuted: more rounds, or too noisy at the cap or when the cap is futile."""
    why = reading.held_by or f"crosses the {threshold_pct:g} % threshold"
    futile = _futile(stats, regression, threshold_pct, scheduled, policy) if not reading.held_by else ""
    if futile:
        return ConfirmationJudgement(
            ConfirmationOutcome.TOO_NOISY,
            scheduled,
            stats,
            f"unconfirmed, too noisy: {reading.interval} after {count} {why}, and {futile}",
        )
    if scheduled < policy.max_rounds:
        grown = policy.grown(scheduled)
        return ConfirmationJudgement(
            ConfirmationOutcome.MORE_ROUNDS,
            grown,
            stats,
            f"inconclusive after {count}: {reading.interval} {why}; running {grown} rounds in all",
        )
    return ConfirmationJudgement(
        ConfirmationOutcome.TOO_NOISY,
        scheduled,
        stats,
        f"unconfirmed, too noisy: {reading.interval} after {count} (the cap) still {why}",
    )


# Futility is judged from this many rounds on: two rounds' spread says too little about the rest.
FUTILITY_FROM_ROUNDS = 4


def _futile(
    stats: ComparisonStats, regression: bool, threshold_pct: float, scheduled: int, policy: ConfirmationPolicy
) -> str:
    """Why even the cap's rounds could not settle it (empty when they still could).

    The interval is projected to the cap: its half-width shrinks with the square root of the
    rounds and with the t quantile's degrees of freedom. When the estimate lies closer to the
    threshold than that projected half-width, neither confirmation nor refutation is in reach,
    and more rounds would only spend runner time.
    """
    if scheduled < FUTILITY_FROM_ROUNDS or scheduled >= policy.max_rounds:
        return ""
    if stats.ci_low_pct is None or stats.ci_high_pct is None or stats.dof < 1 or stats.rounds < 2:
        return ""
    half = (math.log1p(stats.ci_high_pct / 100.0) - math.log1p(stats.ci_low_pct / 100.0)) / 2.0
    more = policy.max_rounds - scheduled
    quantile_now = float(scipy_stats.t.ppf(policy.confidence, stats.dof))
    quantile_cap = float(scipy_stats.t.ppf(policy.confidence, stats.dof + more))
    projected = half * (quantile_cap / quantile_now) * math.sqrt(stats.rounds / (stats.rounds + more))
    toward = math.log1p(stats.change_pct / 100.0) * (1.0 if regression else -1.0)
    if abs(toward - math.log1p(threshold_pct / 100.0)) >= projected:
        return ""
    return (
        f"{policy.max_rounds} rounds would still leave about ±{math.expm1(projected) * 100:.1f} % "
        f"around an estimate that close to the threshold"
    )


def _bounded(
    rounds: Sequence[RoundValues], threshold_pct: float, prior: NoisePrior | None, policy: ConfirmationPolicy
) -> ComparisonStats:
    """The paired estimate with the interval whose ends are one-sided bounds at ``confidence``."""
    return compare_rounds(
        rounds, threshold_pct=threshold_pct, prior=prior, confidence=2.0 * policy.confidence - 1.0
    )


def _directional_bounds(stats: ComparisonStats, regression: bool) -> tuple[float, float] | None:
    """The bounds as changes in the suspect's direction: (nearest zero, farthest), or ``None``."""
    if stats.ci_low_pct is None or stats.ci_high_pct is None:
        return None
    if regression:
        return stats.ci_low_pct, stats.ci_high_pct
    return -stats.ci_high_pct, -stats.ci_low_pct


def _held_by_one_round(
    rounds: Sequence[RoundValues],
    regression: bool,
    threshold_pct: float,
    prior: NoisePrior | None,
    policy: ConfirmationPolicy,
) -> str:
    """Why a confirmation would rest on one round (empty when it does not).

    The rounds are judged again without the one most in the suspect's direction: a bad run in the
    head arm (or a lucky one in the base arm) lands there, and with a prior to keep the interval
    narrow it could carry the estimate past the threshold on its own.
    """
    if len(rounds) < 2:
        return "rests on a single round"

    def toward(pair: RoundValues) -> float:
        ratio = math.log(pair.head / pair.base)
        return ratio if regression else -ratio

    extreme = max(range(len(rounds)), key=lambda index: toward(rounds[index]))
    others = [pair for index, pair in enumerate(rounds) if index != extreme]
    rest = _bounded(others, threshold_pct, prior, policy)
    bounds = _directional_bounds(rest, regression)
    # Without a prior one round left has no interval; the full interval already carried the
    # spread, so the other round's own estimate must then lie beyond the threshold.
    near = bounds[0] if bounds is not None else (rest.change_pct if regression else -rest.change_pct)
    if near >= threshold_pct:
        return ""
    return f"reaches the {threshold_pct:g} % threshold only with round {extreme + 1}"
