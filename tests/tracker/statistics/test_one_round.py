"""A PR comparison's call must hold without the round most in its direction."""

from __future__ import annotations

from tracker.enums import Verdict
from tracker.statistics.ab import NoisePrior, RoundValues, compare_rounds
from tracker.statistics.one_round import MORE_ROUNDS, held_without_extreme_round

PRIOR = NoisePrior(noise_pct=1.0, dof=4)  # a calibration's noise, as the demo's comparisons have


def _judge(rounds: list[RoundValues], prior: NoisePrior | None = PRIOR) -> tuple[Verdict, Verdict, str]:
    stats = compare_rounds(rounds, threshold_pct=2.0, prior=prior)
    held = held_without_extreme_round(rounds, stats, threshold_pct=2.0, prior=prior)
    return stats.verdict, held.verdict, held.reason


def test_one_slow_head_run_no_longer_calls_a_regression() -> None:
    """The demo's #102 in the compile case: +3.5 % [+0.5, +6.6] from two rounds, one far slower."""
    before, after, reason = _judge([RoundValues(100.0, 105.0), RoundValues(100.0, 102.0)])
    assert before is Verdict.REGRESSION
    assert after is Verdict.INCONCLUSIVE
    assert "only with round 1" in reason
    assert reason.endswith(MORE_ROUNDS)


def test_a_change_every_round_shows_is_still_called() -> None:
    rounds = [RoundValues(100.0, 110.0), RoundValues(100.0, 109.0), RoundValues(100.0, 111.0)]
    assert _judge(rounds)[:2] == (Verdict.REGRESSION, Verdict.REGRESSION)
    faster = [RoundValues(100.0, 65.0), RoundValues(100.0, 64.5)]
    assert _judge(faster)[:2] == (Verdict.IMPROVEMENT, Verdict.IMPROVEMENT)


def test_without_a_prior_the_other_round_must_clear_the_dead_zone() -> None:
    """Two steady rounds and no prior: one round left has no interval, and its own +10 % clears it."""
    steady = [RoundValues(100.0, 110.0), RoundValues(100.0, 110.2)]
    assert _judge(steady, prior=None)[:2] == (Verdict.REGRESSION, Verdict.REGRESSION)


def test_a_single_round_decides_nothing() -> None:
    before, after, reason = _judge([RoundValues(100.0, 110.0)])
    assert before is Verdict.REGRESSION  # the prior gives one round an interval
    assert after is Verdict.INCONCLUSIVE
    assert "single round" in reason


def test_no_change_and_inconclusive_are_left_alone() -> None:
    same = [RoundValues(100.0, 100.1), RoundValues(100.0, 99.9), RoundValues(100.0, 100.0)]
    assert _judge(same)[:2] == (Verdict.NO_CHANGE, Verdict.NO_CHANGE)
