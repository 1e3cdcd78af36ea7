"""Run-to-run noise: known noise levels, robustness to steps and bad nights, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tracker.statistics.noise import run_to_run_noise


def nightly(
    length: int, noise_pct: float, seed: int, step_at: int | None = None, step_pct: float = 0.0
) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    logs = math.log(200.0) + rng.normal(0.0, noise_pct / 100.0, size=length)
    if step_at is not None:
        logs[step_at:] += math.log1p(step_pct / 100.0)
    return [[float(value)] for value in np.exp(logs)]


@pytest.mark.parametrize(("noise_pct", "seed"), [(0.3, 1), (1.0, 2), (2.0, 3)])
def test_estimate_is_near_the_truth(noise_pct: float, seed: int) -> None:
    estimate = run_to_run_noise(nightly(100, noise_pct, seed))
    assert estimate is not None
    assert estimate.cv_pct == pytest.approx(noise_pct, rel=0.25)
    assert estimate.differences == 99
    assert not estimate.floored


def test_estimate_stays_near_the_truth_across_a_big_step() -> None:
    flat = run_to_run_noise(nightly(100, 0.5, 4))
    stepped = run_to_run_noise(nightly(100, 0.5, 4, step_at=50, step_pct=20.0))
    assert flat is not None
    assert stepped is not None
    assert stepped.cv_pct == pytest.approx(0.5, rel=0.25)
    assert stepped.cv_pct == pytest.approx(flat.cv_pct, rel=0.05)


def test_bad_nights_barely_move_it() -> None:
    commits = nightly(100, 0.5, 5)
    for index in (10, 40, 70):
        commits[index] = [commits[index][0] * 1.12]
    estimate = run_to_run_noise(commits)
    assert estimate is not None
    assert estimate.cv_pct == pytest.approx(0.5, rel=0.25)


def test_replicate_runs_add_differences() -> None:
    estimate = run_to_run_noise([[100.0, 100.5], [100.2], [99.9, 100.1, 100.0]], min_differences=1)
    assert estimate is not None
    assert estimate.differences == 1 + 2 + 2  # neighbours within commits, then between commit medians


def test_too_little_history_gives_none() -> None:
    assert run_to_run_noise([[100.0], [101.0], [99.0]]) is None


def test_identical_values_hit_the_floor() -> None:
    estimate = run_to_run_noise([[100.0]] * 10, floor_pct=0.05)
    assert estimate is not None
    assert estimate.floored
    assert estimate.cv_pct == 0.05
    assert estimate.sigma == pytest.approx(0.0005)


def test_lookback_uses_the_newest_commits() -> None:
    quiet_then_noisy = nightly(100, 0.2, 6) + nightly(50, 2.0, 7)
    estimate = run_to_run_noise(quiet_then_noisy, lookback=50)
    assert estimate is not None
    assert estimate.cv_pct == pytest.approx(2.0, rel=0.3)


def test_non_positive_values_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        run_to_run_noise([[100.0], [-1.0]] * 5)
