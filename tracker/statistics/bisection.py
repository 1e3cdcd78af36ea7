"""A bisection step's good/bad call for one commit: pure decisions over plain numbers.

Bisection searches the commits between an alert's last good and first bad commit for the culprit,
and each commit it measures is called here. One run decides (:func:`single_run_bisect_call`) when it
lies clearly on one side of the midpoint between the two levels given the series' noise; otherwise
paired rounds of the commit against the range's last good commit (:func:`bisect_call`) decide where
its level lies, with the round counts of confirmations and rounds holding an interfered run set
aside (:mod:`tracker.statistics.paired_rounds`), so noise cannot send the search the wrong way.
The service (:mod:`tracker.detection.bisection`) feeds these functions with real jobs' results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import stats as scipy_stats

from tracker.statistics.ab import RoundValues
from tracker.statistics.paired_rounds import ConfirmationPolicy, set_aside_interfered

__all__ = ["BisectCall", "BisectJudgement", "bisect_call", "single_run_bisect_call"]


class BisectCall(StrEnum):
    """A bisection step's call for one commit."""

    GOOD = "good"
    BAD = "bad"
    UNDECIDED = "undecided"  # single run too close to call: paired rounds are needed
    MORE_ROUNDS = "more_rounds"
    TOO_NOISY = "too_noisy"


@dataclass(frozen=True, slots=True)
class BisectJudgement:
    """A bisection step's call, the share of the way from the good to the bad level, and why."""

    call: BisectCall
    share: float | None
    rounds_wanted: int
    reason: str


# A single run decides a bisection step only when it lies this many standard deviations of one
# run away from the midpoint between the two levels (about 1 in 3,000 to be on the wrong side).
SINGLE_RUN_Z = 3.5


def single_run_bisect_call(
    value: float, *, good_level: float, bad_level: float, noise_pct: float | None
) -> BisectJudgement:
    """Call one commit good or bad from its runs' median, when the noise allows it.

    Parameters
    ----------
    value
        The commit's measured level (ms; the median of its runs).
    good_level, bad_level
        The levels before and after the change (ms).
    noise_pct
        Per-run noise of the series (percent); unknown noise never lets one run decide close calls
        (it must then lie within the outer fifth of the way).

    Returns
    -------
    BisectJudgement
        ``good``/``bad``, or ``undecided`` when paired rounds must settle it.
    """
    if value <= 0 or good_level <= 0 or bad_level <= 0:
        raise ValueError("levels must be positive")
    span = math.log(bad_level / good_level)
    if span == 0:
        return BisectJudgement(BisectCall.UNDECIDED, None, 0, "the two levels are equal")
    offset = math.log(value / good_level)
    share = offset / span
    if noise_pct is not None and noise_pct > 0:
        distance = abs(offset - span / 2.0) / (noise_pct / 100.0)
        decisive = distance >= SINGLE_RUN_Z
        why = f"{distance:.1f} run standard deviations from the midpoint"
    else:
        decisive = abs(share - 0.5) >= 0.3
        why = "no noise estimate; only the outer fifths decide"
    if not decisive:
        return BisectJudgement(
            BisectCall.UNDECIDED, share, 0, f"{share * 100:.0f} % of the way: too close to call ({why})"
        )
    call = BisectCall.BAD if share >= 0.5 else BisectCall.GOOD
    return BisectJudgement(call, share, 0, f"{share * 100:.0f} % of the way ({why})")


def bisect_call(
    rounds: Sequence[RoundValues],
    *,
    span_pct: float,
    scheduled: int,
    policy: ConfirmationPolicy | None = None,
    noise_pct: float | None = None,
) -> BisectJudgement:
    """Call a commit good or bad from paired rounds against the range's last good commit.

    Parameters
    ----------
    rounds
        Usable rounds: ``base`` the last good commit, ``head`` the commit in doubt.
    span_pct
        The change from the good to the bad level (percent, signed), e.g. the alert's confirmed
        paired estimate.
    scheduled
        Rounds that exist so far.
    policy
        Round counts (the same as confirmations').
    noise_pct
        Per-run noise of the series, for :func:`tracker.statistics.paired_rounds.set_aside_interfered`
        (rounds with a run far slower than its arm's others do not count).

    Returns
    -------
    BisectJudgement
        ``bad`` when the interval of the commit's change lies past half the span, ``good`` when
        short of it, else more rounds; ``too_noisy`` at the cap.
    """
    policy = policy or ConfirmationPolicy()
    span = math.log1p(span_pct / 100.0)
    if span == 0:
        raise ValueError("span_pct must not be zero")
    screened = set_aside_interfered(rounds, noise_pct=noise_pct)
    rounds, aside = screened.kept, screened.note()
    if len(rounds) < 2:
        return _too_few_rounds(aside, scheduled, policy)
    mean, half = _share_of_span(rounds, span, policy.confidence)
    count = len(rounds)
    interval = f"{mean * 100:.0f} % of the way [{(mean - half) * 100:.0f}, {(mean + half) * 100:.0f}]{aside}"
    if mean - half > 0.5:
        return BisectJudgement(BisectCall.BAD, mean, scheduled, f"{count} paired rounds: {interval}")
    if mean + half < 0.5:
        return BisectJudgement(BisectCall.GOOD, mean, scheduled, f"{count} paired rounds: {interval}")
    if scheduled < policy.max_rounds:
        return BisectJudgement(
            BisectCall.MORE_ROUNDS,
            mean,
            policy.grown(scheduled),
            f"{count} paired rounds: {interval} straddles half way",
        )
    return BisectJudgement(
        BisectCall.TOO_NOISY,
        mean,
        scheduled,
        f"{count} paired rounds (the cap): {interval} straddles half way",
    )


def _too_few_rounds(aside: str, scheduled: int, policy: ConfirmationPolicy) -> BisectJudgement:
    """The call when fewer than two rounds are left (``aside`` says which were set aside)."""
    if scheduled < policy.max_rounds:
        return BisectJudgement(
            BisectCall.MORE_ROUNDS, None, policy.grown(scheduled), f"fewer than two usable rounds{aside}"
        )
    return BisectJudgement(
        BisectCall.TOO_NOISY, None, scheduled, f"fewer than two usable rounds at the cap{aside}"
    )


def _share_of_span(rounds: Sequence[RoundValues], span: float, confidence: float) -> tuple[float, float]:
    """The commit's mean share of the way from the good to the bad level, and its interval's half-width.

    Each round's log ratio (commit over last good) as a share of the span's log; the half-width of
    a two-sided t interval at ``confidence`` over the rounds (at least two).
    """
    ratios = [math.log(pair.head / pair.base) / span for pair in rounds]
    count = len(ratios)
    mean = sum(ratios) / count
    sd = math.sqrt(sum((ratio - mean) ** 2 for ratio in ratios) / (count - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, count - 1)) * sd / math.sqrt(count)
    return mean, half
