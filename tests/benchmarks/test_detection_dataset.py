"""The detection benchmark's new series kinds and the paired rounds drawn from them (seeded)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from benchmarks.detection.dataset import DatasetShape, LabelledSeries, make_dataset
from benchmarks.detection.runmodel import RunModel, paired_round

SMALL = DatasetShape(
    steps_per_cell=1,
    fixes_per_cell=1,
    flat_per_noise=1,
    drift_per_noise=1,
    bimodal_per_noise=1,
    load_per_noise=3,
    one_night_per_cell=1,
    runner_per_noise=3,
)


@pytest.fixture(scope="module")
def dataset() -> list[LabelledSeries]:
    return make_dataset(7, SMALL)


def _of(dataset: list[LabelledSeries], kind: str) -> list[LabelledSeries]:
    series = [item for item in dataset if item.kind == kind]
    assert series
    return series


def test_same_seed_same_series(dataset: list[LabelledSeries]) -> None:
    again = make_dataset(7, SMALL)
    assert [series.values for series in again] == [series.values for series in dataset]


def test_load_phases_are_environment_without_labelled_change(dataset: list[LabelledSeries]) -> None:
    for series in _of(dataset, "load"):
        assert series.changes == ()
        assert 1 <= len(series.load_phases) <= 3
        assert len(set(series.model.code_level)) == 1  # the code never changes
        inside: set[int] = set()
        for first, stop in series.load_phases:
            assert 3 <= stop - first <= 10
            assert first >= 12
            shift = series.model.load[first]
            assert math.log1p(0.05) <= shift <= math.log1p(0.30)
            assert set(series.model.load[first:stop]) == {shift}
            inside.update(range(first, stop))
        assert all(load == 0.0 for night, load in enumerate(series.model.load) if night not in inside)


def test_one_night_regression_is_two_labelled_changes(dataset: list[LabelledSeries]) -> None:
    for series in _of(dataset, "one_night"):
        regression, fix = series.changes
        assert (regression.direction, fix.direction) == (1, -1)
        assert regression.one_night
        assert fix.one_night
        assert fix.index == regression.index + 1
        assert regression.size_pct == fix.size_pct
        code = series.model.code_level
        assert code[regression.index] - code[regression.index - 1] == pytest.approx(
            math.log1p(regression.size_pct / 100.0)
        )
        assert code[fix.index] == pytest.approx(code[regression.index - 1])


def test_runner_change_moves_level_and_noise_without_labelled_change(dataset: list[LabelledSeries]) -> None:
    for series in _of(dataset, "runner_change"):
        switch = series.runner_switch
        assert switch is not None
        assert series.changes == ()
        env = series.model.environment
        moved = abs(math.expm1(env[switch] - env[switch - 1]))
        assert 0.03 <= moved <= 0.08
        assert len(set(env[:switch])) == 1
        assert len(set(env[switch:])) == 1
        sigma = series.model.run_sigma
        assert sigma[switch] != sigma[switch - 1]
        assert len(set(series.model.code_level)) == 1


def _model(load_from: int = 10, load_to: int = 20, load: float = 0.2) -> RunModel:
    length = 30
    return RunModel(
        code_level=tuple([math.log(100.0)] * 15 + [math.log(110.0)] * 15),
        environment=(0.0,) * length,
        load=tuple(math.log1p(load) if load_from <= night < load_to else 0.0 for night in range(length)),
        run_sigma=(0.005,) * length,
        bad_share=0.0,
    )


def _logs(model: RunModel, base: int, head: int, night: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(3)
    rounds = [paired_round(model, base, head, night, rng) for _ in range(300)]
    return [math.log(pair.base) for pair in rounds], [math.log(pair.head) for pair in rounds]


def test_paired_arms_share_the_load_of_their_night() -> None:
    model = _model()
    quiet_base, quiet_head = _logs(model, 3, 4, night=5)
    loaded_base, loaded_head = _logs(model, 3, 4, night=12)
    # The load moves both arms: each is about 20 % slower on a loaded night...
    assert statistics.fmean(loaded_base) - statistics.fmean(quiet_base) == pytest.approx(
        math.log(1.2), abs=0.01
    )
    assert statistics.fmean(loaded_head) - statistics.fmean(quiet_head) == pytest.approx(
        math.log(1.2), abs=0.01
    )
    # ...alike within a round (its strength varies by round), so the paired ratio does not move.
    ratios = [head - base for base, head in zip(loaded_base, loaded_head, strict=True)]
    assert statistics.fmean(ratios) == pytest.approx(0.0, abs=0.002)
    assert statistics.correlation(loaded_base, loaded_head) > 0.8
    assert statistics.stdev(ratios) < statistics.stdev(loaded_base)


def test_paired_rounds_see_the_code_change_and_independent_run_noise() -> None:
    model = _model()
    base, head = _logs(model, 14, 15, night=25)
    ratios = [h - b for b, h in zip(base, head, strict=True)]
    assert statistics.fmean(ratios) == pytest.approx(math.log(1.1), abs=0.002)
    # Quiet night: the arms' noise is their own (run sigma 0.5 %), a ratio's spread about √2 of it.
    assert statistics.stdev(ratios) == pytest.approx(0.005 * math.sqrt(2.0), rel=0.25)
    assert abs(statistics.correlation(base, head)) < 0.2


def test_paired_rounds_on_a_new_runner_share_its_level(dataset: list[LabelledSeries]) -> None:
    series = _of(dataset, "runner_change")[0]
    switch = series.runner_switch
    assert switch is not None
    base, head = _logs(series.model, switch - 1, switch, night=switch + 1)
    ratios = [h - b for b, h in zip(base, head, strict=True)]
    assert abs(statistics.median(ratios)) < 0.005
