"""The perfect-detector bound: each labelled change handed to the confirmation at its own commit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.detection.dataset import LabelledSeries, TrueChange
from benchmarks.detection.oracle import main, oracle_confirmations
from benchmarks.detection.runmodel import RunModel, nightly_runs, run_sigma_for
from tracker.statistics.paired_rounds import ConfirmationPolicy

LENGTH = 40
STEP_AT = 25


def _step_series(*, size_pct: float, noise_pct: float, seed: int = 3) -> LabelledSeries:
    code = tuple(
        math.log(100.0) + (math.log1p(size_pct / 100) if night >= STEP_AT else 0.0) for night in range(LENGTH)
    )
    model = RunModel(
        code_level=code,
        environment=(0.0,) * LENGTH,
        load=(0.0,) * LENGTH,
        run_sigma=(run_sigma_for(noise_pct),) * LENGTH,
        bad_share=0.0,
    )
    values = tuple(nightly_runs(model, np.random.default_rng(seed)))
    return LabelledSeries(
        name="step",
        kind="step",
        noise_pct=noise_pct,
        values=values,
        reruns=values,
        changes=(TrueChange(STEP_AT, size_pct, 1),),
        bad_nights=(),
        model=model,
        draw_seed=seed,
    )


def test_a_clear_change_is_confirmed_in_the_first_rounds() -> None:
    (result,) = oracle_confirmations(_step_series(size_pct=5.0, noise_pct=0.3), ConfirmationPolicy(), seed=1)
    assert result.confirmed
    assert result.rounds == 2
    assert (result.size_pct, result.noise_pct, result.one_night) == (5.0, 0.3, False)


def test_the_cap_bounds_what_a_noisy_series_can_confirm() -> None:
    """A 2 % change at 4 % run noise needs far more than 4 rounds: never confirmed under that cap."""
    series = _step_series(size_pct=2.0, noise_pct=4.0)
    for seed in range(10):
        (result,) = oracle_confirmations(series, ConfirmationPolicy(max_rounds=4), seed=seed)
        assert not result.confirmed
        assert result.rounds <= 4


def test_changes_under_two_percent_are_left_out() -> None:
    assert oracle_confirmations(_step_series(size_pct=1.0, noise_pct=0.3), ConfirmationPolicy(), seed=1) == []


def test_the_command_prints_a_row_per_cap(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--caps", "2,4", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "recall 2 %" in out
    assert "│ 2 " in out
    assert "│ 4 " in out
