"""The confirmation judgement: whether paired rounds confirm a suspected change, refute it, or need more.

:func:`judge_confirmation` asks the paired rounds of a suspect's last good (base) and first bad
(head) commits (:func:`tracker.statistics.ab.compare_rounds`) two questions, in the suspect's
direction:

* **is there a change?** The one-sided bound nearest zero, at ``change_confidence`` (99 %), lies
  beyond a dead zone of a quarter of the threshold;
* **is it big enough to matter?** The estimate reaches three quarters of the threshold, and the far
  one-sided bound at ``confidence`` (95 %) does not rule the threshold out.

Both yes: **confirmed** (and still so without the round most in the suspect's direction: one bad
run never confirms). The far bound short of the threshold: **refuted** (the rounds rule out a change
that large, even when they show a smaller one). Otherwise more rounds, planned from the rounds'
own noise: as many as a change of exactly the threshold needs to be confirmed four times in five,
never beyond the cap; at the cap, or as soon as the cap could not settle it, **too noisy**, with
the rounds it would need. The promise this keeps: *a change of the threshold is confirmed at least
four times in five when the cap allows the rounds its noise needs, and a commit that changed
nothing is confirmed in well under one suspect in a hundred.* Rounds with an interfered run are set
aside first and the noise prior counts as at most four degrees of freedom
(:mod:`tracker.statistics.paired_rounds`); drift during the rounds cancels out because the arms
alternate. The service (:mod:`tracker.detection.confirmation`) and the detection benchmark
(``benchmarks/detection``) both call it, so they score and act on exactly the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues, without_most_extreme
from tracker.statistics.confirmation_reading import Reading, futile, read_rounds, rounds_needed
from tracker.statistics.paired_rounds import ConfirmationPolicy, SetAside, set_aside_interfered

__all__ = [
    "ConfirmationJudgement",
    "ConfirmationOutcome",
    "confirmation_promise",
    "judge_confirmation",
    "rounds_needed",
]


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

    Refuted or confirmed when the bounds settle it, else :func:`_unsettled` says what comes next.
    """
    kept = screened.kept
    reading = read_rounds(kept, regression, threshold_pct, prior, policy)
    stats = reading.stats
    way = "slower" if regression else "faster"
    count = f"{stats.rounds} paired round{'s' if stats.rounds != 1 else ''}{screened.note()}"
    far_level = f"{policy.confidence * 100:g} %"
    if reading.rules_out_threshold:
        smaller = ": the change they show is smaller than that" if reading.is_change else ""
        return ConfirmationJudgement(
            ConfirmationOutcome.REFUTED,
            scheduled,
            stats,
            f"refuted by {count}: {reading.interval} rules out a change of {threshold_pct:g} % {way} "
            f"({far_level} one-sided bound){smaller}",
        )
    if reading.confirms:
        held_by = _held_by_one_round(kept, regression, threshold_pct, prior, policy)
        if not held_by:
            return ConfirmationJudgement(
                ConfirmationOutcome.CONFIRMED,
                scheduled,
                stats,
                f"confirmed by {count}: {reading.interval}, {way}; "
                f"{_promise(threshold_pct, policy)}, with or without its most {way} round",
            )
        return _unsettled(
            reading,
            count,
            held_by,
            regression=regression,
            threshold_pct=threshold_pct,
            scheduled=scheduled,
            policy=policy,
        )
    return _unsettled(
        reading,
        count,
        "",
        regression=regression,
        threshold_pct=threshold_pct,
        scheduled=scheduled,
        policy=policy,
    )


def _promise(threshold_pct: float, policy: ConfirmationPolicy) -> str:
    """The rule a confirmation met, in words."""
    return (
        f"beyond ±{policy.dead_zone_share * threshold_pct:.2g} % ({policy.change_confidence * 100:g} % "
        f"one-sided bound) and at least {policy.size_share * threshold_pct:.3g} % "
        f"({policy.size_share * 100:g} % of the {threshold_pct:g} % threshold)"
    )


def confirmation_promise(threshold_pct: float, policy: ConfirmationPolicy | None = None) -> str:
    """What "confirmed" promises, in one sentence, for a threshold (the docs and the alert page)."""
    policy = policy or ConfirmationPolicy()
    return (
        f"Confirmed means the paired rounds show a change {_promise(threshold_pct, policy)}, and do not "
        f"rule the threshold out ({policy.confidence * 100:g} % one-sided bound): a change of the "
        f"threshold is confirmed at least {policy.power * 100:g} % of the time when the cap of "
        f"{policy.max_rounds} rounds allows the rounds its noise needs, and a commit that changed "
        "nothing almost never is."
    )


def _unsettled(
    reading: Reading,
    count: str,
    held_by: str,
    *,
    regression: bool,
    threshold_pct: float,
    scheduled: int,
    policy: ConfirmationPolicy,
) -> ConfirmationJudgement:
    """Neither confirmed nor refuted: more rounds, or too noisy at the cap or when the cap is futile."""
    stats = reading.stats
    why = held_by or _open_question(reading, threshold_pct, policy)
    needed = (
        rounds_needed(reading.ratio_sd, threshold_pct, policy, stats.dof - (stats.rounds - 1))
        if reading.ratio_sd is not None
        else None
    )
    needs = f"; about {needed} rounds would settle a change of {threshold_pct:g} %" if needed else ""
    hopeless = "" if held_by else futile(reading, threshold_pct, scheduled, policy)
    if hopeless:
        return ConfirmationJudgement(
            ConfirmationOutcome.TOO_NOISY,
            scheduled,
            stats,
            f"unconfirmed, needs more rounds than the cap of {policy.max_rounds}: {reading.interval} after "
            f"{count} {why}, and {hopeless}{needs}",
        )
    if scheduled < policy.max_rounds:
        grown = policy.grown(scheduled, needed if needed and needed <= policy.max_rounds else None)
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
        f"unconfirmed, needs more rounds than the cap of {policy.max_rounds}: {reading.interval} after "
        f"{count} still {why}{needs}",
    )


def _open_question(reading: Reading, threshold_pct: float, policy: ConfirmationPolicy) -> str:
    """Which question the rounds leave open, in words."""
    if reading.near_change is None:
        return "has no interval yet"
    if not reading.is_change:
        return f"does not yet clear ±{policy.dead_zone_share * threshold_pct:.2g} %"
    return f"lies below {policy.size_share * threshold_pct:.3g} % but does not rule out {threshold_pct:g} %"


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
    narrow it could carry the estimate across the dead zone on its own. Without it the rounds must
    still show a change (the size question is asked of all the rounds: leaving out the most extreme
    one biases the estimate toward zero).
    """
    if len(rounds) < 2:
        return "rests on a single round"

    extreme, others = without_most_extreme(rounds, slower=regression)
    rest = read_rounds(others, regression, threshold_pct, prior, policy)
    # Without a prior one round left has no interval; the full interval already carried the
    # spread, so the other round's own estimate must then clear the dead zone.
    threshold = math.log1p(threshold_pct / 100.0)
    near = rest.near_change if rest.near_change is not None else rest.toward
    if near >= policy.dead_zone_share * threshold:
        return ""
    return f"shows a change only with round {extreme + 1}"
