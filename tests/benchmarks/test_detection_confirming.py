"""Streaming with paired confirmation on hand-built series: a planted step is confirmed, a load
phase refuted (seeded); a confirmed step is pinned, never confirmed twice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.detection import confirming
from benchmarks.detection.confirming import StreamOutcome, Suspect, stream_with_confirmation
from benchmarks.detection.dataset import LabelledSeries, SeriesKind, TrueChange, make_series
from benchmarks.detection.runmodel import RunModel, nightly_runs, run_sigma_for
from benchmarks.detection.scoring import StreamTally
from tracker.statistics.confirmation import ConfirmationOutcome

LENGTH = 70


def _series(
    kind: SeriesKind, *, step_at: int | None = None, load: tuple[int, int] | None = None, seed: int = 5
) -> LabelledSeries:
    code = [math.log(100.0)] * LENGTH
    changes: tuple[TrueChange, ...] = ()
    if step_at is not None:
        code = [level + (math.log(1.10) if night >= step_at else 0.0) for night, level in enumerate(code)]
        changes = (TrueChange(step_at, 10.0, 1),)
    shift = math.log(1.25)
    model = RunModel(
        code_level=tuple(code),
        environment=(0.0,) * LENGTH,
        load=tuple(
            shift if load is not None and load[0] <= night < load[1] else 0.0 for night in range(LENGTH)
        ),
        run_sigma=(run_sigma_for(0.5),) * LENGTH,
        bad_share=0.0,
    )
    rng = np.random.default_rng(seed)
    values = nightly_runs(model, rng)
    return LabelledSeries(
        name=kind,
        kind=kind,
        noise_pct=0.5,
        values=tuple(values),
        reruns=tuple(values),
        changes=changes,
        bad_nights=(),
        model=model,
        draw_seed=seed,
        load_phases=(load,) if load is not None else (),
    )


def _confirmed(outcome: StreamOutcome) -> list[tuple[int, int]]:
    return [
        (suspect.first_bad, suspect.direction)
        for suspect in outcome.with_outcome(ConfirmationOutcome.CONFIRMED)
    ]


def test_a_planted_step_is_confirmed_at_its_commit_the_night_it_lands() -> None:
    series = _series("step", step_at=40)
    outcome = stream_with_confirmation(series)
    assert _confirmed(outcome) == [(40, 1)]
    (alert,) = outcome.with_outcome(ConfirmationOutcome.CONFIRMED)
    assert alert.last_good == 39
    assert alert.night == 40  # a suspect on its first night, confirmed by that night's rounds
    assert alert.paired_pct is not None
    assert abs(alert.paired_pct - 10.0) < 2.0
    tally = StreamTally()
    tally.add(series, outcome)
    assert tally.tally.true_positives == 1
    assert tally.neutral_alerts == 0


def test_a_load_phase_is_refuted_and_its_runs_leave_the_series() -> None:
    series = _series("load", load=(30, 38))
    outcome = stream_with_confirmation(series)
    assert _confirmed(outcome) == []
    refuted = outcome.with_outcome(ConfirmationOutcome.REFUTED)
    assert any(30 <= suspect.first_bad < 38 and suspect.direction == 1 for suspect in refuted)
    # Refuted at its first night, the phase is found again a night later and refuted again: each
    # refuted run leaves the series, so the phase never stands as a level of its own.
    assert sum(30 <= suspect.first_bad < 38 for suspect in refuted) >= 2
    assert all(suspect.rounds >= 2 for suspect in outcome.suspects)
    tally = StreamTally()
    tally.add(series, outcome)
    assert tally.neutral_alerts == 0
    assert tally.rounds == outcome.rounds


def test_the_same_seed_gives_the_same_suspects() -> None:
    series = _series("load", load=(30, 38))
    assert stream_with_confirmation(series) == stream_with_confirmation(series)


@pytest.mark.parametrize(("index", "change_at"), [(110, 37), (362, 27)])
def test_a_confirmed_step_is_pinned_and_never_confirmed_twice(
    index: int, change_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two series of the benchmark where detection, nights later, placed the confirmed step one
    # commit on (its last good run refuted and gone), and paired rounds confirmed it again there.
    series = make_series(index)
    assert [change.index for change in series.changes] == [change_at]
    pinned = stream_with_confirmation(series)
    assert [first_bad for first_bad, _ in _confirmed(pinned)] == [change_at]
    tally = StreamTally()
    tally.add(series, pinned)
    assert tally.duplicates == 0
    monkeypatch.setattr(confirming, "PIN_RADIUS", -1)  # without the pinning: the same change twice
    unpinned = StreamTally()
    unpinned.add(series, stream_with_confirmation(series))
    assert unpinned.duplicates == 1


def test_a_change_of_about_the_confirmed_step_s_size_is_that_step_another_size_is_not() -> None:
    confirmed = Suspect(
        first_bad=40,
        last_good=39,
        direction=1,
        night=40,
        detected_pct=9.0,
        established=False,
        outcome=ConfirmationOutcome.CONFIRMED,
        rounds=2,
        paired_pct=10.0,
    )
    moved = {(41, 1)}
    assert confirming._matches([confirmed], 41, 40, 1, moved, 9.5)
    assert not confirming._matches([confirmed], 41, 40, 1, moved | {(40, 1)}, 9.5)  # both reported
    assert not confirming._matches([confirmed], 41, 40, 1, moved, 30.0)  # a step of its own
    assert not confirming._matches([confirmed], 45, 44, 1, {(45, 1)}, 9.5)  # too far away
    assert not confirming._matches([confirmed], 41, 40, -1, {(41, -1)}, -9.5)  # the other way


def test_a_missed_change_is_counted_by_its_size_and_why() -> None:
    series = _series("step", step_at=40)
    base = Suspect(
        first_bad=40,
        last_good=39,
        direction=1,
        night=40,
        detected_pct=9.0,
        established=False,
        outcome=ConfirmationOutcome.TOO_NOISY,
        rounds=16,
        paired_pct=4.0,
    )
    tally = StreamTally()
    tally.add(series, StreamOutcome(suspects=(base,), points=LENGTH))
    tally.add(series, StreamOutcome(suspects=(), points=LENGTH))
    assert dict(tally.missed_by_size) == {(10.0, "too_noisy"): 1, (10.0, "no suspect"): 1}
    assert tally.missed_as == {"too_noisy": 1, "no suspect": 1}
