"""Paired rounds for a suspected change: whether it gets them, how many, and which of them count.

A change found on a series is *raised* at once only when nobody can re-run it (imported results);
otherwise it is a *suspect*, and :func:`plan_change` schedules paired rounds of its last good and
first bad commits (A B A B …, a fresh process each, on one runner). :class:`ConfirmationPolicy`
sets how many rounds a confirmation starts with and may grow to, the bounds' confidence and the
noise prior's weight; bisection steps run by the same counts. Interference (another tenant on the
host, a throttling GPU, a preempted process) only ever makes a run slower, so a round whose run
lies far above the other runs of its own arm is set aside (:func:`set_aside_interfered`, fewer
than half of them) before :mod:`tracker.statistics.confirmation` or
:mod:`tracker.statistics.bisection` reads the rest; :func:`interfered_runs` applies the same rule
to single nightly runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from tracker.statistics.ab import NoisePrior, RoundValues
from tracker.statistics.detector import Change

__all__ = [
    "ChangeAction",
    "ChangePlan",
    "ConfirmationPolicy",
    "SetAside",
    "interfered_runs",
    "plan_change",
    "same_size",
    "set_aside_interfered",
]


class ChangeAction(StrEnum):
    """What a newly found change calls for."""

    CONFIRM = "confirm"  # a suspect: paired rounds of its two commits decide
    RAISE = "raise"  # nobody can re-run it (imports): raised at once, marked unconfirmed
    NOTHING = "nothing"  # nothing measured before it: no last good commit to compare with


@dataclass(frozen=True, slots=True)
class ConfirmationPolicy:
    """How many paired rounds a confirmation starts with, the cap it may grow to, and what it asks.

    A confirmation asks two questions (:mod:`tracker.statistics.confirmation`): *is there a change*
    (the one-sided bound at ``change_confidence`` nearest zero clears ``dead_zone_share`` of the
    threshold) and *is it big enough to matter* (the estimate reaches ``size_share`` of the threshold,
    and the far bound at ``confidence`` does not rule the threshold out). Rounds grow while the
    answer is open: doubling (2 → 4 → 8 → 16), or straight to what the rounds' noise says a change of
    the threshold needs to be confirmed with probability ``power``, never beyond ``max_rounds``.
    Bisection steps read ``confidence`` as a two-sided interval. ``max_prior_dof`` caps the weight of
    the noise prior: a prior from a long history is robust to bad runs, a round's ratio is not, so
    the rounds' own spread must keep its say.
    """

    initial_rounds: int = 2
    max_rounds: int = 16
    confidence: float = 0.95
    change_confidence: float = 0.995
    dead_zone_share: float = 0.25
    size_share: float = 0.75
    power: float = 0.8
    max_prior_dof: int = 4

    def __post_init__(self) -> None:
        if not 1 <= self.initial_rounds <= self.max_rounds:
            raise ValueError("need 1 <= initial_rounds <= max_rounds")
        if not 0.5 < self.confidence < 1 or not 0.5 < self.change_confidence < 1:
            raise ValueError("need 0.5 < confidence, change_confidence < 1")
        if not 0 <= self.dead_zone_share < self.size_share <= 1:
            raise ValueError("need 0 <= dead_zone_share < size_share <= 1")
        if not 0.5 <= self.power < 1:
            raise ValueError("need 0.5 <= power < 1")
        if self.max_prior_dof < 0:
            raise ValueError("max_prior_dof must not be negative")

    def grown(self, scheduled: int, needed: int | None = None) -> int:
        """Rounds in all after the next growth step from ``scheduled``: double, or the rounds
        ``needed`` when more (at most the cap)."""
        return min(max(2 * scheduled, self.initial_rounds, needed or 0), self.max_rounds)

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


# A change re-placed next to a confirmed step is that step when its size is within this share of
# the step the paired rounds measured (in logs), or within the threshold for a small step (one
# run's estimate of a 2 % step is often 3 %); a step of another size is a step of its own.
SAME_SIZE_SHARE = 0.5


def same_size(change_pct: float, step_pct: float, threshold_pct: float) -> bool:
    """Whether a change of ``change_pct`` is, by its size, the step of ``step_pct`` (same direction)."""
    change, step = math.log1p(change_pct / 100.0), math.log1p(step_pct / 100.0)
    tolerance = max(SAME_SIZE_SHARE * abs(step), math.log1p(threshold_pct / 100.0))
    return change * step > 0 and abs(change - step) <= tolerance
