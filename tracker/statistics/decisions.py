"""What to do about a change detection found: pure decisions over plain numbers, no database, no clock.

The service (:mod:`tracker.detection.alerts`, :mod:`tracker.detection.confirmation`, :mod:`tracker.detection.bisection`) feeds
these functions with real jobs' results; the detection benchmark (``benchmarks/detection``) feeds
them with drawn re-runs. Both therefore score and act on exactly the same rules:

* :func:`plan_change`: a change found on a series is *raised* at once only when nobody can re-run
  it (imported results); otherwise it is a *suspect*, confirmed first by paired rounds of its
  last good and first bad commits (A B A B …, a fresh process each, on one runner).
* :func:`judge_confirmation`: the paired rounds' interval (:func:`tracker.statistics.ab.compare_rounds`)
  decides, read as one-sided bounds at 95 % because the question is directional. **Confirmed**
  only when the bound nearest zero lies beyond the threshold in the suspect's direction, with or
  without the round most in that direction (one bad run never confirms); **refuted** when the far
  bound lies short of the threshold (the rounds rule out a change that large); otherwise more
  rounds (2 → 4 → 8 → 16), then **too noisy** — never confirmed, and said early when even the
  cap could not settle it. The noise prior counts as at most four degrees of freedom. Drift
  during the rounds cancels out because the arms alternate.
* :func:`set_aside_interfered`: interference (another tenant on the host, a throttling GPU, a
  preempted process) only ever makes a run slower. A round whose run lies far above the other
  runs of its own arm is set aside, and the rounds it leaves decide; fewer than half of them.
* :func:`bisect_call`: a bisection step's good/bad call. One run decides when it lies clearly on
  one side of the midpoint given the series' noise; otherwise paired rounds of the commit against
  the range's last good commit decide where its level lies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import stats as scipy_stats

from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues, compare_rounds
from tracker.statistics.detector import Change

__all__ = [
    "BisectCall",
    "BisectJudgement",
    "ChangeAction",
    "ChangePlan",
    "ConfirmationJudgement",
    "ConfirmationOutcome",
    "ConfirmationPolicy",
    "SetAside",
    "bisect_call",
    "interfered_runs",
    "judge_confirmation",
    "plan_change",
    "set_aside_interfered",
    "single_run_bisect_call",
]


class ChangeAction(StrEnum):
    """What a newly found change calls for."""

    CONFIRM = "confirm"  # a suspect: paired rounds of its two commits decide
    RAISE = "raise"  # nobody can re-run it (imports): raised at once, marked unconfirmed
    NOTHING = "nothing"  # nothing measured before it: no last good commit to compare with


class ConfirmationOutcome(StrEnum):
    """How paired rounds judged a suspect."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    MORE_ROUNDS = "more_rounds"
    TOO_NOISY = "too_noisy"


@dataclass(frozen=True, slots=True)
class ConfirmationPolicy:
    """How many paired rounds a confirmation starts with, the cap it may grow to, and its bounds.

    Rounds double while the judgement is inconclusive (2 → 4 → 8 → 16): a clear change of several
    times the noise is settled by the first two, a change near the threshold on a noisy machine
    needs the cap. ``confidence`` is the coverage of the **one-sided** bound in the suspect's
    direction that confirmation and refutation compare with the threshold (bisection steps use it
    as a two-sided interval). ``max_prior_dof`` caps the weight of the noise prior: a prior from a
    long history is robust to bad runs, a round's ratio is not, so the rounds' own spread must
    keep its say.
    """

    initial_rounds: int = 2
    max_rounds: int = 16
    confidence: float = 0.95
    max_prior_dof: int = 4

    def __post_init__(self) -> None:
        if not 1 <= self.initial_rounds <= self.max_rounds:
            raise ValueError("need 1 <= initial_rounds <= max_rounds")
        if not 0.5 < self.confidence < 1:
            raise ValueError("need 0.5 < confidence < 1")
        if self.max_prior_dof < 0:
            raise ValueError("max_prior_dof must not be negative")

    def grown(self, scheduled: int) -> int:
        """Rounds in all after the next growth step from ``scheduled`` (at most the cap)."""
        return min(max(2 * scheduled, self.initial_rounds), self.max_rounds)

    def capped(self, prior: NoisePrior | None) -> NoisePrior | None:
        """The prior with at most ``max_prior_dof`` degrees of freedom (``None`` when it has none)."""
        if prior is None or prior.dof <= 0 or self.max_prior_dof == 0:
            return None
        return NoisePrior(noise_pct=prior.noise_pct, dof=min(prior.dof, self.max_prior_dof))


@dataclass(frozen=True, slots=True)
class ChangePlan:
    """The decision for one change: act, and on which commits of the series (indices)."""

    action: ChangeAction
    last_good_index: int | None
    first_bad_index: int
    rounds: int
    max_rounds: int
    reason: str


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


# A run is taken for interfered with when it lies this far above the other runs of its arm: this
# many standard deviations of one run, and never less than the floor (a run-to-run noise estimate
# from fastest steps can be a fraction of a percent). Without a noise estimate, the wider default.
INTERFERENCE_SIGMAS = 4.0
INTERFERENCE_FLOOR_PCT = 5.0
INTERFERENCE_WITHOUT_NOISE_PCT = 10.0
# Fewer than half of the rounds (and at least one) may be set aside: a commit whose runs are slow
# half the time or more is slow, not interfered with. On a shared 2-core guest the host slowed a
# quarter to a third of the toy's runs by 20-150 % for stretches of minutes (docs/toy-noise.md).


@dataclass(frozen=True, slots=True)
class SetAside:
    """Rounds kept for the judgement, and those set aside because a run in them was interfered with.

    ``aside`` holds 0-based positions in the rounds given; ``tolerance_pct`` is how far above its
    arm's level a run had to lie.
    """

    kept: tuple[RoundValues, ...]
    aside: tuple[int, ...]
    tolerance_pct: float

    def note(self) -> str:
        """A clause for the judgement's reason (empty when nothing was set aside)."""
        if not self.aside:
            return ""
        listed = ", ".join(str(index + 1) for index in self.aside)
        plural = "s" if len(self.aside) > 1 else ""
        return (
            f"; round{plural} {listed} set aside: a run more than {self.tolerance_pct:.3g} % slower than "
            f"the other runs of its commit (interference only slows a run down)"
        )


def set_aside_interfered(rounds: Sequence[RoundValues], *, noise_pct: float | None) -> SetAside:
    """Set aside the rounds holding a run far slower than its own arm's level.

    Each arm's level is the lower median of its runs (interference is one-sided, so the lower half
    is the clean one). A run more than ``tolerance`` above it is taken for interfered with, and its
    round (both arms: the pairing is what cancels drift) leaves the judgement. The worst rounds go
    first, fewer than half of them (and one of two); a judgement left
    with fewer than two rounds asks for more.

    Parameters
    ----------
    rounds
        Usable rounds, in the order they ran.
    noise_pct
        Per-run noise of the series (percent), when known.

    Returns
    -------
    SetAside
        The rounds kept (in order), the positions set aside and the tolerance used.
    """
    tolerance = _tolerance(noise_pct)
    if len(rounds) < 2:
        return SetAside(tuple(rounds), (), tolerance)
    base_level = _lower_median([pair.base for pair in rounds])
    head_level = _lower_median([pair.head for pair in rounds])
    limit = math.log1p(tolerance / 100.0)
    excess: dict[int, float] = {}
    for index, pair in enumerate(rounds):
        worst = max(math.log(pair.base / base_level), math.log(pair.head / head_level))
        if worst > limit:
            excess[index] = worst
    allowed = max(1, (len(rounds) - 1) // 2)
    aside = tuple(sorted(sorted(excess, key=lambda index: -excess[index])[:allowed]))
    kept = tuple(pair for index, pair in enumerate(rounds) if index not in aside)
    return SetAside(kept, aside, tolerance)


def interfered_runs(
    values: Sequence[float], *, reference: Sequence[float], noise_pct: float | None
) -> list[int]:
    """Positions of ``values`` lying far above the lower median of ``reference`` (runs of one commit).

    The same rule as :func:`set_aside_interfered`, for single runs measured apart from the rounds:
    a commit's nightly run against the arm of paired rounds that measured the same commit. Empty
    when ``reference`` is empty.
    """
    if not reference:
        return []
    tolerance = _tolerance(noise_pct)
    level = _lower_median(reference)
    limit = math.log1p(tolerance / 100.0)
    return [index for index, value in enumerate(values) if value > 0 and math.log(value / level) > limit]


def _tolerance(noise_pct: float | None) -> float:
    if noise_pct is not None and noise_pct > 0:
        return max(INTERFERENCE_FLOOR_PCT, INTERFERENCE_SIGMAS * noise_pct)
    return INTERFERENCE_WITHOUT_NOISE_PCT


def _lower_median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def plan_change(change: Change, *, can_rerun: bool, policy: ConfirmationPolicy | None = None) -> ChangePlan:
    """Decide what a change found on a series calls for.

    Parameters
    ----------
    change
        The change, as :func:`tracker.statistics.changepoints.detect_changes` reports it.
    can_rerun
        Whether perftrack's runners measured the first bad commit (so they can measure it again);
        imported results cannot be re-run.
    policy
        Round counts for the confirmation.

    Returns
    -------
    ChangePlan
        ``confirm`` with the commits and rounds, ``raise`` (unconfirmed), or ``nothing``.
    """
    policy = policy or ConfirmationPolicy()
    if change.index < 1:
        return ChangePlan(
            ChangeAction.NOTHING, None, change.index, 0, 0, "nothing measured before it: no last good commit"
        )
    if not can_rerun:
        return ChangePlan(
            ChangeAction.RAISE,
            change.index - 1,
            change.index,
            0,
            0,
            "imported results, which perftrack cannot re-run: raised unconfirmed",
        )
    return ChangePlan(
        ChangeAction.CONFIRM,
        change.index - 1,
        change.index,
        policy.initial_rounds,
        policy.max_rounds,
        f"paired rounds of the last good and first bad commits ({policy.initial_rounds}, "
        f"up to {policy.max_rounds}) decide before it is raised",
    )


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
    screened = set_aside_interfered(rounds, noise_pct=prior.noise_pct if prior is not None else None)
    rounds = screened.kept
    aside = screened.note()
    if len(rounds) < 2:
        # One round decides nothing, either way: it may be the interfered one left in.
        few = f"{len(rounds)} usable round{'s' if len(rounds) != 1 else ''}{aside}"
        if scheduled < policy.max_rounds:
            grown = policy.grown(scheduled)
            return ConfirmationJudgement(
                ConfirmationOutcome.MORE_ROUNDS, grown, None, f"{few}: running {grown} rounds in all"
            )
        return ConfirmationJudgement(
            ConfirmationOutcome.TOO_NOISY, scheduled, None, f"unconfirmed, too noisy: {few} at the cap"
        )
    prior = policy.capped(prior)
    stats = _bounded(rounds, threshold_pct, prior, policy)
    way = "slower" if regression else "faster"
    count = f"{stats.rounds} paired round{'s' if stats.rounds != 1 else ''}{aside}"
    level = f"{policy.confidence * 100:g} %"
    bounds = _directional_bounds(stats, regression)
    if bounds is None:
        interval = f"{stats.change_pct:+.2f} % (no interval yet)"
        beyond = short = False
        held_by = ""
    else:
        near, far = bounds
        interval = f"{stats.change_pct:+.2f} % [{stats.ci_low_pct:+.2f}, {stats.ci_high_pct:+.2f}]"
        beyond = near >= threshold_pct
        short = far < threshold_pct
        held_by = _held_by_one_round(rounds, regression, threshold_pct, prior, policy) if beyond else ""
    if beyond and not held_by:
        return ConfirmationJudgement(
            ConfirmationOutcome.CONFIRMED,
            scheduled,
            stats,
            f"confirmed by {count}: {interval}, {way} beyond the {threshold_pct:g} % threshold "
            f"({level} one-sided bound), with or without its most {way} round",
        )
    if short:
        return ConfirmationJudgement(
            ConfirmationOutcome.REFUTED,
            scheduled,
            stats,
            f"refuted by {count}: {interval} rules out a change of {threshold_pct:g} % {way} "
            f"({level} one-sided bound)",
        )
    why = held_by or f"crosses the {threshold_pct:g} % threshold"
    futile = _futile(stats, regression, threshold_pct, scheduled, policy) if not held_by else ""
    if futile:
        return ConfirmationJudgement(
            ConfirmationOutcome.TOO_NOISY,
            scheduled,
            stats,
            f"unconfirmed, too noisy: {interval} after {count} {why}, and {futile}",
        )
    if scheduled < policy.max_rounds:
        grown = policy.grown(scheduled)
        return ConfirmationJudgement(
            ConfirmationOutcome.MORE_ROUNDS,
            grown,
            stats,
            f"inconclusive after {count}: {interval} {why}; running {grown} rounds in all",
        )
    return ConfirmationJudgement(
        ConfirmationOutcome.TOO_NOISY,
        scheduled,
        stats,
        f"unconfirmed, too noisy: {interval} after {count} (the cap) still {why}",
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
        Per-run noise of the series, for :func:`set_aside_interfered` (rounds with a run far
        slower than its arm's others do not count).

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
    grown = policy.grown(scheduled)
    screened = set_aside_interfered(rounds, noise_pct=noise_pct)
    rounds, aside = screened.kept, screened.note()
    if len(rounds) < 2:
        if scheduled < policy.max_rounds:
            return BisectJudgement(
                BisectCall.MORE_ROUNDS, None, grown, f"fewer than two usable rounds{aside}"
            )
        return BisectJudgement(
            BisectCall.TOO_NOISY, None, scheduled, f"fewer than two usable rounds at the cap{aside}"
        )
    ratios = [math.log(pair.head / pair.base) / span for pair in rounds]
    count = len(ratios)
    mean = sum(ratios) / count
    sd = math.sqrt(sum((ratio - mean) ** 2 for ratio in ratios) / (count - 1))
    half = float(scipy_stats.t.ppf(0.5 + policy.confidence / 2.0, count - 1)) * sd / math.sqrt(count)
    interval = f"{mean * 100:.0f} % of the way [{(mean - half) * 100:.0f}, {(mean + half) * 100:.0f}]{aside}"
    if mean - half > 0.5:
        return BisectJudgement(BisectCall.BAD, mean, scheduled, f"{count} paired rounds: {interval}")
    if mean + half < 0.5:
        return BisectJudgement(BisectCall.GOOD, mean, scheduled, f"{count} paired rounds: {interval}")
    if scheduled < policy.max_rounds:
        return BisectJudgement(
            BisectCall.MORE_ROUNDS, mean, grown, f"{count} paired rounds: {interval} straddles half way"
        )
    return BisectJudgement(
        BisectCall.TOO_NOISY,
        mean,
        scheduled,
        f"{count} paired rounds (the cap): {interval} straddles half way",
    )
