"""A/B round statistics: verdicts on known inputs, the prior, the detectable change and A/A calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tracker.enums import Verdict
from tracker.statistics.ab import (
    NoisePrior,
    RoundValues,
    calibrate_aa,
    compare_rounds,
    minimum_detectable_change_pct,
)


def rounds(count: int, change_pct: float, noise_pct: float, seed: int) -> list[RoundValues]:
    """Paired rounds with a shared per-round drift, as interleaved A B rounds see it."""
    rng = np.random.default_rng(seed)
    result = []
    for _ in range(count):
        drift = rng.normal(0.0, 0.02)
        base, head = rng.normal(0.0, noise_pct / 100.0, size=2)
        result.append(
            RoundValues(
                base=float(250.0 * math.exp(drift + base)),
                head=float(250.0 * (1 + change_pct / 100.0) * math.exp(drift + head)),
            )
        )
    return result


def test_qwen_regression_over_four_rounds() -> None:
    pairs = [
        RoundValues(263.7, 287.6),
        RoundValues(264.1, 288.3),
        RoundValues(263.2, 287.0),
        RoundValues(263.9, 287.9),
    ]
    result = compare_rounds(pairs, threshold_pct=2.0)
    assert result.verdict == Verdict.REGRESSION
    assert result.change_pct == pytest.approx(9.07, abs=0.05)
    assert result.dof == 3
    assert result.ci_low_pct is not None
    assert result.ci_low_pct > 8.5


def test_identical_arms_are_no_change() -> None:
    result = compare_rounds(rounds(8, 0.0, 0.3, seed=1), threshold_pct=2.0)
    assert result.verdict == Verdict.NO_CHANGE
    assert result.ci_low_pct is not None
    assert result.ci_high_pct is not None
    assert -2.0 < result.ci_low_pct < 0.0 < result.ci_high_pct < 2.0


def test_pairing_cancels_the_shared_drift() -> None:
    # 2 % drift per round, 0.3 % per-arm noise: the paired interval sees only the noise.
    result = compare_rounds(rounds(8, 5.0, 0.3, seed=2), threshold_pct=2.0)
    assert result.verdict == Verdict.REGRESSION
    assert result.round_noise_pct is not None
    assert result.round_noise_pct < 0.6


def test_one_round_without_prior_is_inconclusive() -> None:
    result = compare_rounds([RoundValues(100.0, 110.0)], threshold_pct=2.0)
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.dof == 0
    assert result.ci_low_pct is None


def test_prior_turns_two_rounds_into_a_verdict() -> None:
    pairs = rounds(2, 5.0, 0.3, seed=3)
    alone = compare_rounds(pairs, threshold_pct=2.0)
    with_prior = compare_rounds(pairs, threshold_pct=2.0, prior=NoisePrior(noise_pct=0.4, dof=19))
    assert alone.dof == 1
    assert with_prior.dof == 20
    assert with_prior.verdict == Verdict.REGRESSION
    assert alone.ci_low_pct is not None
    assert with_prior.ci_low_pct is not None
    assert with_prior.ci_low_pct > alone.ci_low_pct


def test_improvement_verdict() -> None:
    assert compare_rounds(rounds(8, -6.0, 0.5, seed=4), threshold_pct=2.0).verdict == Verdict.IMPROVEMENT


def test_minimum_detectable_change_matches_the_formula() -> None:
    expected = (math.exp((stats.t.ppf(0.975, 3) + stats.norm.ppf(0.8)) * math.sqrt(2) * 0.01 / 2.0) - 1) * 100
    assert minimum_detectable_change_pct(1.0, 4, 3) == pytest.approx(expected)
    with pytest.raises(ValueError, match="at least one round"):
        minimum_detectable_change_pct(1.0, 0, 3)


def test_aa_calibration_is_reproducible_and_quiet() -> None:
    aa = rounds(10, 0.0, 0.5, seed=5)
    first = calibrate_aa(aa, threshold_pct=2.0, round_counts=(2, 4, 8, 20), seed=7)
    second = calibrate_aa(aa, threshold_pct=2.0, round_counts=(2, 4, 8, 20), seed=7)
    assert first == second
    assert set(first.false_verdict_rate) == {2, 4, 8}  # 20 rounds do not fit in 10
    assert first.subsamples[2] == math.comb(10, 2)
    assert first.subsamples[4] == 200
    assert all(rate <= 0.05 for rate in first.false_verdict_rate.values())
    assert first.round_noise_pct == pytest.approx(0.5, rel=0.5)


@pytest.mark.parametrize(
    ("pairs", "threshold", "message"),
    [
        ([], 2.0, "at least one"),
        ([RoundValues(100.0, 101.0)], 0.0, "threshold_pct"),
        ([RoundValues(0.0, 101.0)], 2.0, "positive"),
    ],
)
def test_bad_input_is_refused(pairs: list[RoundValues], threshold: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare_rounds(pairs, threshold_pct=threshold)


def test_one_slow_round_does_not_set_the_calibrated_noise() -> None:
    # The demo's first A/A round: a cold process ran the head arm 28 % slow.
    rounds = [RoundValues(4.304, 5.504), RoundValues(4.248, 4.183), RoundValues(4.219, 4.215)]
    calibration = calibrate_aa(rounds, threshold_pct=2.0, round_counts=(2, 3))
    assert calibration.outlier_rounds == (1,)
    assert calibration.round_noise_pct < 2.0
    plain_sd = float(np.std([math.log(r.head / r.base) for r in rounds], ddof=1)) / math.sqrt(2) * 100
    assert plain_sd > 10.0  # what a plain standard deviation would have claimed
