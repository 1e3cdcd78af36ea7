"""Pure decisions about suspects: plans, paired-round judgements and bisection calls, on hand-built rounds."""

from __future__ import annotations

import math
import re

import pytest

from tests.factories import suspect_change
from tracker.statistics.ab import NoisePrior, RoundValues
from tracker.statistics.bisection import BisectCall, bisect_call, single_run_bisect_call
from tracker.statistics.confirmation import ConfirmationOutcome, judge_confirmation
from tracker.statistics.confirmation_reading import rounds_needed
from tracker.statistics.detector import Change
from tracker.statistics.paired_rounds import (
    ChangeAction,
    ConfirmationPolicy,
    plan_change,
    set_aside_interfered,
)

BASE = 100.0
QUIET = NoisePrior(noise_pct=0.3, dof=20)


def _rounds(*changes_pct: float, base: float = BASE) -> list[RoundValues]:
    """One round per change: the base arm at ``base``, the head arm that many percent away."""
    return [RoundValues(base=base, head=base * (1.0 + change / 100.0)) for change in changes_pct]


def _change(index: int, before: float = BASE, after: float = 110.0) -> Change:
    return suspect_change(index, before, after)


def _judge(
    rounds: list[RoundValues],
    *,
    regression: bool = True,
    scheduled: int | None = None,
    prior: NoisePrior | None = QUIET,
    policy: ConfirmationPolicy | None = None,
) -> ConfirmationOutcome:
    return judge_confirmation(
        rounds,
        regression=regression,
        threshold_pct=2.0,
        scheduled=len(rounds) if scheduled is None else scheduled,
        prior=prior,
        policy=policy,
    ).outcome


# --- plan_change ---------------------------------------------------------------------------------


def test_a_change_runners_measured_is_a_suspect_with_its_two_commits() -> None:
    plan = plan_change(_change(7), can_rerun=True)
    assert plan.action is ChangeAction.CONFIRM
    assert (plan.last_good_index, plan.first_bad_index) == (6, 7)
    assert (plan.rounds, plan.max_rounds) == (2, 16)


def test_imported_results_are_raised_unconfirmed_and_the_first_commit_has_nothing_before_it() -> None:
    assert plan_change(_change(7), can_rerun=False).action is ChangeAction.RAISE
    assert plan_change(_change(0), can_rerun=True).action is ChangeAction.NOTHING


def test_the_plan_follows_the_policy() -> None:
    plan = plan_change(_change(3), can_rerun=True, policy=ConfirmationPolicy(initial_rounds=4, max_rounds=8))
    assert (plan.rounds, plan.max_rounds) == (4, 8)


# --- judge_confirmation --------------------------------------------------------------------------


def test_a_clear_regression_is_confirmed_by_the_first_two_rounds() -> None:
    judgement = judge_confirmation(
        _rounds(10.1, 9.8), regression=True, threshold_pct=2.0, scheduled=2, prior=QUIET
    )
    assert judgement.outcome is ConfirmationOutcome.CONFIRMED
    assert judgement.rounds_wanted == 2
    assert judgement.stats is not None
    assert judgement.stats.change_pct == pytest.approx(9.95, abs=0.05)
    assert judgement.stats.ci_low_pct is not None
    assert judgement.stats.ci_low_pct >= 2.0


def test_a_clear_improvement_is_confirmed_and_never_a_regression() -> None:
    assert _judge(_rounds(-9.0, -9.3), regression=False) is ConfirmationOutcome.CONFIRMED
    # The same rounds read as a regression suspect rule a slowdown of 2 % out.
    assert _judge(_rounds(-9.0, -9.3), regression=True) is ConfirmationOutcome.REFUTED


def test_a_neutral_pair_is_refuted() -> None:
    assert _judge(_rounds(0.2, -0.3)) is ConfirmationOutcome.REFUTED
    assert _judge(_rounds(0.2, -0.3), regression=False) is ConfirmationOutcome.REFUTED


def test_unsettled_rounds_grow_by_doubling_or_to_what_their_noise_needs_up_to_the_cap() -> None:
    judgement = judge_confirmation(
        _rounds(2.6, 1.4), regression=True, threshold_pct=2.0, scheduled=2, prior=QUIET
    )
    assert judgement.outcome is ConfirmationOutcome.MORE_ROUNDS
    assert judgement.rounds_wanted == 4
    # Rounds that spread ±2 % around +1 %: a change of the threshold needs more than doubling gives.
    spread = judge_confirmation(
        _rounds(3.0, -1.0, 3.1, -1.1), regression=True, threshold_pct=2.0, scheduled=4, prior=QUIET
    )
    assert spread.outcome is ConfirmationOutcome.MORE_ROUNDS
    assert spread.stats is not None
    assert spread.stats.round_noise_pct is not None
    needed = rounds_needed(
        math.sqrt(2.0) * spread.stats.round_noise_pct / 100.0, 2.0, ConfirmationPolicy(), prior_dof=4
    )
    assert 8 < needed <= 16
    assert spread.rounds_wanted == needed
    capped = judge_confirmation(
        _rounds(3.0, -1.0, 3.1, -1.1),
        regression=True,
        threshold_pct=2.0,
        scheduled=4,
        prior=QUIET,
        policy=ConfirmationPolicy(max_rounds=6),
    )
    # An operator's lower cap: the rounds say at once that they need more than it allows.
    assert capped.outcome is ConfirmationOutcome.TOO_NOISY
    assert "the cap of 6" in capped.reason
    assert f"about {needed} rounds would settle" in capped.reason


def test_when_even_the_cap_could_not_settle_it_the_rounds_stop_early_and_say_what_they_need() -> None:
    # +1.5 % with a spread of ±2 % a round: sixteen rounds could neither show a change nor rule 2 % out.
    rounds = _rounds(3.5, -0.5, 3.6, -0.6, 3.4, -0.4, 3.5, -0.5)
    judgement = judge_confirmation(
        rounds, regression=True, threshold_pct=2.0, scheduled=8, prior=NoisePrior(noise_pct=1.0, dof=20)
    )
    assert judgement.outcome is ConfirmationOutcome.TOO_NOISY
    assert judgement.rounds_wanted == 8
    assert "needs more rounds than the cap of 16" in judgement.reason
    assert re.search(r"about \d+ rounds would settle a change of 2 %", judgement.reason)
    # Two rounds say too little about the spread to give up on.
    early = judge_confirmation(
        rounds[:2], regression=True, threshold_pct=2.0, scheduled=2, prior=NoisePrior(noise_pct=1.0, dof=20)
    )
    assert early.outcome is ConfirmationOutcome.MORE_ROUNDS


def test_a_round_with_an_interfered_run_is_set_aside_and_the_others_decide() -> None:
    # A neutral commit; in round 2 the head arm's process ran 40 % slow (another tenant on the host).
    rounds = _rounds(0.2, 40.0, -0.1, 0.3)
    judgement = judge_confirmation(
        rounds, regression=True, threshold_pct=2.0, scheduled=4, prior=NoisePrior(noise_pct=1.0, dof=20)
    )
    assert judgement.outcome is ConfirmationOutcome.REFUTED
    assert "round 2 set aside" in judgement.reason
    assert judgement.stats is not None
    assert judgement.stats.rounds == 3
    # The same slow run in the base arm does not make an improvement out of nothing.
    slow_base = [RoundValues(base=140.0, head=100.2), *_rounds(0.1, -0.2, 0.3)]
    improvement = judge_confirmation(
        slow_base, regression=False, threshold_pct=2.0, scheduled=4, prior=NoisePrior(noise_pct=1.0, dof=20)
    )
    assert improvement.outcome is ConfirmationOutcome.REFUTED
    assert "round 1 set aside" in improvement.reason


def test_with_two_rounds_one_interfered_run_asks_for_more_rounds() -> None:
    judgement = judge_confirmation(
        _rounds(0.1, 35.0), regression=True, threshold_pct=2.0, scheduled=2, prior=NoisePrior(1.0, 20)
    )
    assert judgement.outcome is ConfirmationOutcome.MORE_ROUNDS
    assert judgement.rounds_wanted == 4


def test_set_aside_takes_the_worst_rounds_and_fewer_than_half() -> None:
    screened = set_aside_interfered(_rounds(0.0, 30.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0), noise_pct=1.0)
    assert screened.aside == (1, 3)
    assert len(screened.kept) == 6
    assert screened.tolerance_pct == 5.0  # 4 x 1 % is under the floor
    worst_first = set_aside_interfered(_rounds(0.0, 30.0, 9.0, 20.0, 0.0, 0.0, 12.0, 0.0), noise_pct=1.0)
    assert worst_first.aside == (1, 3, 6)  # 8 rounds: three may go, the worst first
    # A commit slow in half its runs is slow: fewer than half of its rounds may be set aside.
    half_slow = set_aside_interfered(_rounds(0.0, 30.0, 0.0, 30.0, 0.0, 30.0, 0.0, 30.0), noise_pct=1.0)
    assert len(half_slow.aside) == 3
    # Within the tolerance nothing goes; a noisier series tolerates more; no estimate: 10 %.
    assert set_aside_interfered(_rounds(0.0, 4.0, 0.5), noise_pct=1.0).aside == ()
    assert set_aside_interfered(_rounds(0.0, 15.0, 0.5), noise_pct=5.0).aside == ()
    assert set_aside_interfered(_rounds(0.0, 15.0, 0.5), noise_pct=None).aside == (1,)
    assert set_aside_interfered(_rounds(30.0), noise_pct=1.0).aside == ()  # one round: no level


def test_bisection_rounds_with_an_interfered_run_do_not_count() -> None:
    # The commit sits at the good level; in round 3 its run was 50 % slow.
    rounds = _rounds(0.3, -0.2, 50.0, 0.1)
    call = bisect_call(rounds, span_pct=20.0, scheduled=4, noise_pct=1.0)
    assert call.call is BisectCall.GOOD
    assert "round 3 set aside" in call.reason


def test_a_change_at_the_threshold_is_confirmed() -> None:
    rounds = _rounds(*([2.5, 1.5] * 8))  # a paired estimate of 2 %, as a true 2 % change gives
    judgement = judge_confirmation(
        rounds, regression=True, threshold_pct=2.0, scheduled=16, prior=NoisePrior(1.0, 20)
    )
    assert judgement.outcome is ConfirmationOutcome.CONFIRMED
    assert "at least 1.5 %" in judgement.reason
    # An estimate a little under the threshold still is: the rule asks three quarters of it.
    under = _rounds(*([2.2, 1.2] * 8))
    assert _judge(under, prior=NoisePrior(1.0, 20)) is ConfirmationOutcome.CONFIRMED


def test_a_real_change_smaller_than_the_threshold_is_refuted_and_said_so() -> None:
    rounds = _rounds(*([1.1, 0.9] * 8))  # a clear +1 % change, half the threshold
    judgement = judge_confirmation(rounds, regression=True, threshold_pct=2.0, scheduled=16, prior=QUIET)
    assert judgement.outcome is ConfirmationOutcome.REFUTED
    assert "smaller than that" in judgement.reason


def test_a_neutral_commit_on_a_noisy_machine_is_not_confirmed_at_the_cap() -> None:
    rounds = _rounds(*([2.0, -2.0, 1.0, -1.0] * 4))  # no change, ±2 % a round
    judgement = judge_confirmation(
        rounds, regression=True, threshold_pct=2.0, scheduled=16, prior=NoisePrior(1.0, 20)
    )
    assert judgement.outcome is not ConfirmationOutcome.CONFIRMED


def test_one_bad_run_in_the_head_arm_costs_rounds_and_does_not_confirm() -> None:
    # A quiet series with a weighty prior: the fourth round's head arm ran slow (+4.8 %, inside the
    # tolerance for interference). All four rounds would show a change of the threshold; without
    # that one round they do not, so more rounds are asked.
    rounds = _rounds(1.0, 0.8, 1.2, 4.8)
    weighty = ConfirmationPolicy(max_prior_dof=20)
    judgement = judge_confirmation(
        rounds, regression=True, threshold_pct=2.0, scheduled=4, prior=QUIET, policy=weighty
    )
    assert judgement.outcome is ConfirmationOutcome.MORE_ROUNDS
    assert "only with round 4" in judgement.reason
    # More rounds at the old level settle it: not confirmed.
    later = _rounds(0.2, 4.5, 0.1, -0.2, 0.3, 0.0, -0.1, 0.2)
    assert _judge(later, prior=NoisePrior(0.3, 4)) is not ConfirmationOutcome.CONFIRMED


def test_a_single_usable_round_never_confirms() -> None:
    assert _judge(_rounds(15.0), scheduled=2) is ConfirmationOutcome.MORE_ROUNDS
    assert _judge(_rounds(15.0), scheduled=16) is ConfirmationOutcome.TOO_NOISY


def test_the_prior_counts_as_at_most_max_prior_dof_degrees_of_freedom() -> None:
    rounds = _rounds(4.0, 3.0)
    capped = judge_confirmation(rounds, regression=True, threshold_pct=2.0, scheduled=2, prior=QUIET)
    assert capped.stats is not None
    assert capped.stats.dof == 1 + 4  # the rounds' own degree of freedom and four of the prior's
    weighty = judge_confirmation(
        rounds,
        regression=True,
        threshold_pct=2.0,
        scheduled=2,
        prior=QUIET,
        policy=ConfirmationPolicy(max_prior_dof=20),
    )
    assert weighty.stats is not None
    assert weighty.stats.dof == 21
    assert capped.stats.ci_low_pct is not None
    assert weighty.stats.ci_low_pct is not None
    assert capped.stats.ci_low_pct < weighty.stats.ci_low_pct  # the rounds' spread keeps its say
    assert ConfirmationPolicy(max_prior_dof=0).capped(QUIET) is None


def test_the_bounds_are_one_sided_at_the_policy_confidence() -> None:
    judgement = judge_confirmation(
        _rounds(5.0, 4.0), regression=True, threshold_pct=2.0, scheduled=2, prior=QUIET
    )
    assert judgement.stats is not None
    assert judgement.stats.confidence == pytest.approx(0.90)  # each end a one-sided 95 % bound


def test_without_rounds_the_first_look_is_asked_for_and_failed_arms_are_too_noisy() -> None:
    first = judge_confirmation([], regression=True, threshold_pct=2.0, scheduled=0)
    assert (first.outcome, first.rounds_wanted) == (ConfirmationOutcome.MORE_ROUNDS, 2)
    failed = judge_confirmation([], regression=True, threshold_pct=2.0, scheduled=2)
    assert failed.outcome is ConfirmationOutcome.TOO_NOISY


def test_without_a_prior_two_rounds_settle_only_what_their_own_spread_allows() -> None:
    assert _judge(_rounds(10.0, 10.1), prior=None) is ConfirmationOutcome.CONFIRMED
    assert _judge(_rounds(4.0, 6.0), prior=None) is ConfirmationOutcome.MORE_ROUNDS


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        judge_confirmation(_rounds(1.0), regression=True, threshold_pct=0.0, scheduled=1)
    with pytest.raises(ValueError, match="initial_rounds"):
        ConfirmationPolicy(initial_rounds=4, max_rounds=2)
    with pytest.raises(ValueError, match="confidence"):
        ConfirmationPolicy(confidence=0.4)


# --- bisection -----------------------------------------------------------------------------------


def test_bisect_call_places_a_commit_on_the_side_of_half_the_span() -> None:
    assert bisect_call(_rounds(9.9, 10.2), span_pct=10.0, scheduled=2).call is BisectCall.BAD
    assert bisect_call(_rounds(0.1, -0.2), span_pct=10.0, scheduled=2).call is BisectCall.GOOD
    # An improvement: the span is negative, a commit at the new level is bad.
    assert bisect_call(_rounds(-9.1, -8.9), span_pct=-9.0, scheduled=2).call is BisectCall.BAD


def test_bisect_call_straddling_half_way_asks_for_more_rounds_then_is_too_noisy() -> None:
    more = bisect_call(_rounds(2.0, 8.0), span_pct=10.0, scheduled=2)
    assert (more.call, more.rounds_wanted) == (BisectCall.MORE_ROUNDS, 4)
    capped = bisect_call(_rounds(*([2.0, 8.0] * 8)), span_pct=10.0, scheduled=16)
    assert capped.call is BisectCall.TOO_NOISY
    few = bisect_call(_rounds(10.0), span_pct=10.0, scheduled=2)
    assert (few.call, few.rounds_wanted) == (BisectCall.MORE_ROUNDS, 4)
    with pytest.raises(ValueError, match="span"):
        bisect_call(_rounds(1.0, 1.0), span_pct=0.0, scheduled=2)


def test_one_run_decides_a_bisection_step_only_far_from_the_midpoint() -> None:
    bad = single_run_bisect_call(110.0, good_level=100.0, bad_level=110.0, noise_pct=0.5)
    assert bad.call is BisectCall.BAD
    assert bad.share == pytest.approx(1.0)
    good = single_run_bisect_call(100.2, good_level=100.0, bad_level=110.0, noise_pct=0.5)
    assert good.call is BisectCall.GOOD
    close = single_run_bisect_call(105.5, good_level=100.0, bad_level=110.0, noise_pct=0.5)
    assert close.call is BisectCall.UNDECIDED
    # Without a noise estimate only the outer fifths of the way decide.
    assert (
        single_run_bisect_call(101.0, good_level=100.0, bad_level=110.0, noise_pct=None).call
        is BisectCall.GOOD
    )
    assert (
        single_run_bisect_call(104.0, good_level=100.0, bad_level=110.0, noise_pct=None).call
        is BisectCall.UNDECIDED
    )
    same = single_run_bisect_call(100.0, good_level=100.0, bad_level=100.0, noise_pct=0.5)
    assert same.call is BisectCall.UNDECIDED
    with pytest.raises(ValueError, match="positive"):
        single_run_bisect_call(0.0, good_level=100.0, bad_level=110.0, noise_pct=0.5)


def test_one_round_left_after_setting_aside_neither_refutes_nor_confirms() -> None:
    # With a tight prior the one clean round would have refuted on its own; it might be the
    # interfered one that stayed in, so more rounds decide.
    judgement = judge_confirmation(
        _rounds(0.1, 40.0), regression=True, threshold_pct=2.0, scheduled=2, prior=NoisePrior(0.3, 20)
    )
    assert judgement.outcome is ConfirmationOutcome.MORE_ROUNDS
    assert judgement.rounds_wanted == 4
    assert "1 usable round" in judgement.reason
    at_cap = judge_confirmation(
        _rounds(0.1, 40.0), regression=True, threshold_pct=2.0, scheduled=16, prior=NoisePrior(0.3, 20)
    )
    assert at_cap.outcome is ConfirmationOutcome.TOO_NOISY
