"""Which nightly run a refuted suspect rested on (pure), and the service excluding it."""

from __future__ import annotations

import random

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.test_alerts import BASE_MS, commit_in, series_alerts, sha
from tracker.confirmation import odd_side
from tracker.models import AlertStatus, Commit, Job, JobReason, Run


def test_a_load_spike_on_the_first_bad_night_is_that_night_s_run() -> None:
    assert odd_side(last_good=100.0, earlier=[100.0, 101.0, 99.0], before=100.0, after=120.0) == "first_bad"


def test_a_bad_night_just_before_a_normal_one_is_the_last_good_run() -> None:
    # Night 4 ran 8 % slow; night 5 is normal and looked like an improvement against it.
    assert odd_side(last_good=108.0, earlier=[100.0, 100.5, 99.5, 100.0], before=108.0, after=100.0) == (
        "last_good"
    )


def test_without_history_the_first_bad_run_is_blamed() -> None:
    assert odd_side(last_good=108.0, earlier=[], before=108.0, after=100.0) == "first_bad"


def test_the_service_excludes_the_bad_night_before_a_normal_one(session: Session) -> None:
    bench = Bench(session, runner="h200-flaky")
    rng = random.Random(8)

    def measure(commit: Commit, job: Job) -> float | None:
        value = BASE_MS * (1 + rng.gauss(0, 0.003))
        if int(commit.sha[:7], 16) == 20 and job.reason is JobReason.NIGHTLY:
            return value * 1.10  # a throttled night whose suspect paired rounds refute
        return value

    for index in range(22):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    refuted = [alert for alert in series_alerts(session) if alert.status is AlertStatus.INVALID]
    assert refuted
    assert [alert for alert in series_alerts(session) if alert.status is not AlertStatus.INVALID] == []
    excluded = session.scalars(select(Run).where(Run.excluded_reason.is_not(None))).all()
    assert [run.commit.sha for run in excluded] == [sha(20)]
