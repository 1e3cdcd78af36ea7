"""Median shifts between two small groups: seeded synthetic groups with a planted shift or none,
and hand-built edge cases (one run a side, identical runs, an odd run, nothing to compare)."""

from __future__ import annotations

import random

import pytest

from tracker.statistics.shifts import median_shift, robust_log_spread


def group(rng: random.Random, level: float, noise_pct: float, size: int) -> list[float]:
    return [level * (1 + rng.gauss(0, noise_pct / 100)) for _ in range(size)]


@pytest.mark.parametrize("planted_pct", [5.0, 9.1, -5.0])
def test_a_planted_shift_three_times_the_noise_is_found_in_every_seed(planted_pct: float) -> None:
    for seed in range(100):
        rng = random.Random(seed)
        before = group(rng, 263.7, 0.5, 5)
        after = group(rng, 263.7 * (1 + planted_pct / 100), 0.5, 5)
        shift = median_shift(before, after, min_pct=2.0)
        assert shift is not None
        assert shift.beyond_noise, (seed, shift)
        assert shift.change_pct == pytest.approx(planted_pct, abs=1.5)


def test_no_shift_is_rarely_called_a_shift() -> None:
    called = 0
    for seed in range(400):
        rng = random.Random(seed)
        shift = median_shift(group(rng, 100.0, 1.0, 4), group(rng, 100.0, 1.0, 4), min_pct=0.0)
        assert shift is not None
        called += shift.beyond_noise
    assert called <= 8  # z = 3 on four runs a side: about 1 % of seeds


def test_noise_wider_than_the_shift_hides_it() -> None:
    rng = random.Random(3)
    before, after = group(rng, 100.0, 8.0, 3), group(rng, 104.0, 8.0, 3)
    shift = median_shift(before, after, min_pct=2.0)
    assert shift is not None
    assert shift.noise_pct is not None
    assert shift.noise_pct > 10.0
    assert not shift.beyond_noise


def test_one_run_a_side_is_judged_by_the_minimum_alone() -> None:
    shift = median_shift([263.7], [287.6], min_pct=2.0)
    assert shift is not None
    assert shift.noise_pct is None
    assert shift.beyond_noise
    assert shift.change_pct == pytest.approx(9.06, abs=0.01)
    assert shift.delta == pytest.approx(23.9)
    small = median_shift([263.7], [267.0], min_pct=2.0)
    assert small is not None
    assert not small.beyond_noise


def test_the_absolute_minimum_keeps_a_tiny_stage_from_counting() -> None:
    shift = median_shift([0.2, 0.2], [0.5, 0.5], min_pct=3.0, min_abs=1.0)
    assert shift is not None
    assert shift.change_pct == pytest.approx(150.0)
    assert not shift.beyond_noise


def test_one_odd_run_does_not_set_the_noise() -> None:
    before = [263.7, 263.9, 264.1, 263.8, 330.0]  # one run beside a CPU hog
    after = [287.6, 287.2, 287.9, 287.5, 287.4]
    shift = median_shift(before, after, min_pct=2.0)
    assert shift is not None
    assert shift.before == 263.9
    assert shift.beyond_noise


def test_identical_runs_have_no_spread_and_the_minimum_decides() -> None:
    assert robust_log_spread([5.0, 5.0, 5.0]) == 0.0
    assert robust_log_spread([5.0]) is None
    shift = median_shift([5.0, 5.0], [5.05, 5.05], min_pct=2.0)
    assert shift is not None
    assert shift.noise_pct == 0.0
    assert not shift.beyond_noise


def test_nothing_to_compare_is_none() -> None:
    assert median_shift([], [1.0], min_pct=2.0) is None
    assert median_shift([1.0], [], min_pct=2.0) is None
    assert median_shift([0.0, -1.0, float("nan")], [1.0], min_pct=2.0) is None
