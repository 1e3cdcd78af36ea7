"""Alerts from real uploads: the Qwen-Image regression imported, nightly series with confirmation,
refuted outliers, fixes, triage and sweeps."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads, result_body
from tests.tracker.bench import LIMITS, Bench
from tracker.catalog.cases import get_current_case
from tracker.detection.triage import alert_state, list_alerts, triage_alert
from tracker.enums import AlertStatus, JobReason, JobState
from tracker.errors import Conflict, InvalidInput
from tracker.models import Alert, Calibration, Commit, Job, Run
from tracker.workflows.results import store_result
from tracker.workflows.sweep import sweep
from wire import CommitIn, ResultIn

BASE_MS, SLOW_MS, FIXED_MS = 263.7, 287.6, 258.2


def sha(index: int) -> str:
    return f"{index:07x}" + "c" * 33


def commit_in(index: int) -> CommitIn:
    return CommitIn(
        sha=sha(index),
        parents=[sha(index - 1)] if index else [],
        title=f"commit {index}",
        author_name="A. Dev",
        committed_at=dt.datetime(2026, 4, 1, tzinfo=dt.UTC) + dt.timedelta(days=index),
    )


def import_regression(session: Session) -> list[Run]:
    return [
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS).run
        for body in regression_payloads()
    ]


def series_alerts(session: Session) -> list[Alert]:
    return list(session.scalars(select(Alert).order_by(Alert.id)))


def test_the_imported_qwen_regression_raises_an_alert_and_its_fix_closes_it(session: Session) -> None:
    runs = import_regression(session)
    assert [round(run.denoise_step_ms or 0, 1) for run in runs] == [BASE_MS, SLOW_MS, FIXED_MS]

    [alert] = series_alerts(session)
    assert alert.direction.value == "regression"
    assert alert.first_bad_commit.sha == "4739f2e"
    assert alert.last_good_commit is not None
    assert alert.last_good_commit.sha == "669a9bd"
    assert alert.change_pct == pytest.approx(9.06, abs=0.01)
    assert alert.threshold_pct == 2.0
    assert alert.single_run_basis is True
    assert alert.noise_pct is None
    assert alert.confirmation == "not_possible"  # imports cannot be re-run
    assert alert.status is AlertStatus.FIXED
    assert alert.fixed_by_commit is not None
    assert alert.fixed_by_commit.sha == "9c1d5e2"
    reasons = [event.reason for event in alert.events]
    assert "on single runs without a noise estimate" in reasons[0]
    assert "undone by 9c1d5e2" in reasons[-1]


def test_the_loose_ci_gate_of_20_percent_sees_nothing(session: Session) -> None:
    case = get_current_case(session=session, slug="qwen-image-t2i-1024")
    case.threshold_pct = 20.0
    for entry in case.hardware:
        entry.threshold_pct = None
    session.flush()
    import_regression(session)
    assert series_alerts(session) == []


def test_a_re_import_does_not_duplicate_the_alert(session: Session) -> None:
    import_regression(session)
    import_regression(session)  # same idempotency keys: nothing new
    result = sweep(session=session, now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    assert result.series >= 1
    assert len(series_alerts(session)) == 1


def nightly_history(bench: Bench, values: dict[int, float], noise: float, seed: int = 7) -> None:
    rng = random.Random(seed)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        return values.get(index, BASE_MS) * (1 + rng.gauss(0, noise))

    for index in range(max(values) + 1):
        bench.nightly(commit_in(index))
        bench.drain(measure)


def test_in_a_nightly_history_the_regression_is_confirmed_at_the_exact_commit(session: Session) -> None:
    bench = Bench(session)
    rng = random.Random(3)
    levels = dict.fromkeys(range(20), BASE_MS) | {20: SLOW_MS}

    def measure(commit: Commit, job: Job) -> float | None:
        return levels[int(commit.sha[:7], 16)] * (1 + rng.gauss(0, 0.005))

    for index in range(21):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [alert] = series_alerts(session)
    assert alert.first_bad_commit.sha == sha(20)
    assert alert.last_good_commit is not None
    assert alert.last_good_commit.sha == sha(19)
    assert alert.confirmation == "confirmed"
    assert alert_state(alert) == "open"
    assert alert.single_run_basis is False
    assert alert.noise_pct is not None
    assert 0.2 < alert.noise_pct < 1.0
    assert alert.change_pct == pytest.approx(9.1, abs=1.0)
    # Two paired rounds, A B then B A: the last good and the first bad commit, each a fresh job.
    confirm_jobs = [job for job in bench.ran if job.reason is JobReason.CONFIRM]
    assert [job.candidate.base_commit.sha for job in confirm_jobs] == [sha(19), sha(20), sha(20), sha(19)]
    assert [job.arm.value if job.arm else None for job in confirm_jobs] == ["base", "head", "head", "base"]
    assert "confirmed by 2 paired rounds" in " ".join(event.reason for event in alert.events)
    # Adjacent on the first-parent line: the culprit is the first bad commit itself.
    assert alert.bisection_state == "not_needed"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == sha(20)

    levels[21] = FIXED_MS
    bench.nightly(commit_in(21))
    bench.drain(measure)
    assert alert.status is AlertStatus.FIXED
    assert alert.fixed_by_commit is not None
    assert alert.fixed_by_commit.sha == sha(21)
    # The fix is a confirmed improvement of its own, closed as the fix of the regression.
    [fix] = [other for other in series_alerts(session) if other.id != alert.id]
    assert (fix.direction.value, fix.status, fix.first_bad_commit.sha) == (
        "improvement",
        AlertStatus.EXPECTED,
        sha(21),
    )


def test_a_single_bad_night_is_refuted_and_its_runner_noted(session: Session) -> None:
    bench = Bench(session, runner="h200-flaky")
    rng = random.Random(5)
    bad_night = {"pending": True}

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        value = BASE_MS * (1 + rng.gauss(0, 0.004))
        if index == 20 and job.reason is JobReason.NIGHTLY and bad_night.pop("pending", False):
            return value * 1.09  # the node was throttled that night
        return value

    for index in range(21):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [alert] = series_alerts(session)
    assert alert.status is AlertStatus.INVALID
    assert alert.confirmation == "refuted"
    assert "h200-flaky" in alert.events[-1].reason
    excluded = session.scalars(select(Run).where(Run.excluded_reason.is_not(None))).all()
    assert len(excluded) == 1
    assert excluded[0].commit.sha == sha(20)
    assert list_alerts(session=session, status="open") == []
    # Later nights at the old level raise nothing new.
    for index in range(21, 24):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    assert len(series_alerts(session)) == 1


def test_a_confirmation_that_cannot_run_leaves_the_alert_open_unconfirmed(session: Session) -> None:
    bench = Bench(session)
    rng = random.Random(9)

    def measure(commit: Commit, job: Job) -> float | None:
        if job.reason is JobReason.CONFIRM:
            return None
        index = int(commit.sha[:7], 16)
        return (SLOW_MS if index >= 20 else BASE_MS) * (1 + rng.gauss(0, 0.004))

    for index in range(21):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [alert] = series_alerts(session)
    assert alert.status is AlertStatus.OPEN
    assert alert.confirmation == "not_possible"
    assert "could not measure the paired rounds" in alert.events[-1].reason
    # Two more nights at the new level establish it statistically.
    for index in range(21, 23):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    assert len(series_alerts(session)) == 1


def test_improvements_are_alerts_too(session: Session) -> None:
    bench = Bench(session)
    nightly_history(bench, dict.fromkeys(range(20), BASE_MS) | {20: 240.0, 21: 240.0, 22: 240.0}, 0.004)
    [alert] = series_alerts(session)
    assert alert.direction.value == "improvement"
    assert alert.first_bad_commit.sha == sha(20)
    assert alert.confirmation.established


def test_noise_alone_raises_nothing(session: Session) -> None:
    bench = Bench(session)
    nightly_history(bench, dict.fromkeys(range(40), BASE_MS), 0.005, seed=11)
    assert series_alerts(session) == []
    assert session.scalars(select(Job).where(Job.reason == JobReason.CONFIRM)).all() == []


def test_triage_moves_and_records_who_and_why(session: Session) -> None:
    import_regression(session)
    [alert] = series_alerts(session)
    now = dt.datetime(2026, 6, 2, tzinfo=dt.UTC)
    with pytest.raises(Conflict, match="can move to open"):
        triage_alert(
            session=session, alert_id=alert.id, status="acknowledged", actor="ops", reason="", now=now
        )
    triage_alert(
        session=session, alert_id=alert.id, status="open", actor="ops", reason="not fixed on GB300", now=now
    )
    triage_alert(session=session, alert_id=alert.id, status="acknowledged", actor="ops", reason="", now=now)
    with pytest.raises(InvalidInput, match="say why"):
        triage_alert(session=session, alert_id=alert.id, status="expected", actor="ops", reason=" ", now=now)
    triage_alert(
        session=session, alert_id=alert.id, status="expected", actor="ops", reason="fp8 trade-off", now=now
    )
    assert alert.status is AlertStatus.EXPECTED
    last = alert.events[-1]
    assert (last.actor, last.reason, last.from_status, last.to_status) == (
        "ops",
        "fp8 trade-off",
        AlertStatus.ACKNOWLEDGED,
        AlertStatus.EXPECTED,
    )
    with pytest.raises(InvalidInput, match="unknown status"):
        list_alerts(session=session, status="closed")
    assert [a.id for a in list_alerts(session=session, status="expected")] == [alert.id]
    assert JobState.DONE  # the enum stays importable for readers of this module


def calibrate(bench: Bench, *, round_noise_pct: float) -> None:
    """An A/A calibration of three rounds for the bench's series."""
    bench.session.add(
        Calibration(
            case_id=bench.case.id,
            hardware_kind_id=bench.kind.id,
            rounds=3,
            round_noise_pct=round_noise_pct,
            threshold_pct=2.0,
            false_verdict_rate={},
            mde_pct={},
        )
    )


# The toy DiT's offload case as the demo measures it (ms per step): a regression (3), half fixed
# (6), a speed-up (7), a second regression (9) fixed two commits later (11). Nightly runs skip
# commits 3, 4 and 9, so both regressions are bisected.
TOY_LEVELS = [4.25, 4.25, 4.25, 6.9, 6.9, 6.9, 4.75, 3.45, 3.45, 4.2, 4.2, 3.42, 3.42]
TOY_NIGHTS = [0, 1, 2, 5, 6, 7, 8, 10, 11, 12]


@pytest.mark.parametrize("seed", range(1, 7))
def test_a_dense_history_gets_every_change_its_culprit_and_its_fix(session: Session, seed: int) -> None:
    bench = Bench(session, case="qwen-image-t2i-1024")
    for index in range(len(TOY_LEVELS)):
        bench.commit(commit_in(index))
    calibrate(bench, round_noise_pct=1.5)
    rng = random.Random(seed)

    def measure(commit: Commit, job: Job) -> float | None:
        return TOY_LEVELS[int(commit.sha[:7], 16)] * (1 + rng.gauss(0, 0.012))

    for night in TOY_NIGHTS:
        bench.nightly(commit_in(night))
        bench.drain(measure)
    found = [
        (
            alert.direction.value,
            int(alert.first_bad_commit.sha[:7], 16),
            int(alert.culprit_commit.sha[:7], 16) if alert.culprit_commit else None,
            alert.status.value,
            int(alert.fixed_by_commit.sha[:7], 16) if alert.fixed_by_commit else None,
        )
        for alert in series_alerts(session)
        if alert.status is not AlertStatus.INVALID
    ]
    # Each fix is a confirmed improvement of its own that closes its regression ("expected": the
    # fix of that alert); the speed-up right after the first fix is another change, not the fix moved.
    assert found == [
        ("regression", 5, 3, "fixed", 6),
        ("improvement", 6, 6, "expected", None),
        ("improvement", 7, 7, "open", None),
        ("regression", 10, 9, "fixed", 11),
        ("improvement", 11, 11, "expected", None),
    ]


def test_a_change_the_other_way_at_an_alerted_commit_is_not_a_second_alert(session: Session) -> None:
    def store(index: int, value: float, run: int) -> None:
        body = result_body(
            commit={
                "sha": sha(index),
                "title": f"commit {index}",
                "committed_at": f"2026-04-{index + 1:02d}T00:00:00Z",
            },
            step_times_ms=[value] * 5,
            denoise_step_mean_ms=value,
            idempotency_key=f"import-run-{index}-{run}",
        )
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)

    for index in range(6):
        store(index, BASE_MS, 0)
    store(6, BASE_MS * 1.10, 0)
    [alert] = series_alerts(session)
    assert (alert.direction.value, alert.first_bad_commit.sha) == ("regression", sha(6))
    # More runs of the same commit pull its level below the one before it: the change at commit 6
    # now reads as an improvement, which the existing alert's commit already stands for.
    store(6, BASE_MS * 0.90, 1)
    store(6, BASE_MS * 0.90, 2)
    assert [other.first_bad_commit.sha for other in series_alerts(session)] == [sha(6)]


# The demo's offload case on a 2-core machine (ms per step, 2026-12-01): incident 1 (3), the CFG
# speed-up (6), incident 2 (8), #101 a little (10), #102 (11); nights skip 1, 3, 4, 8 and 12 as
# the demo does. By night 9 the series holds three real steps in six commits.
YOUNG_LEVELS = [1.14, 1.14, 1.14, 1.94, 1.94, 1.94, 1.30, 1.30, 1.90, 1.90, 1.87, 1.05, 1.05]
YOUNG_NIGHTS = [0, 2, 5, 6, 7, 9, 10, 11]


@pytest.mark.parametrize("seed", range(1, 4))
def test_a_young_series_does_not_count_its_confirmed_steps_as_noise(session: Session, seed: int) -> None:
    bench = Bench(session, case="qwen-image-t2i-1024")
    for index in range(len(YOUNG_LEVELS)):
        bench.commit(commit_in(index))
    calibrate(bench, round_noise_pct=1.85)
    rng = random.Random(seed)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        # As in the demo, night 2's run came out 50 % slow (the host): refuted, left out.
        slowed = 1.5 if index == 2 and job.reason is JobReason.NIGHTLY else 1.0
        return YOUNG_LEVELS[index] * slowed * (1 + rng.gauss(0, 0.004))

    for night in YOUNG_NIGHTS:
        bench.nightly(commit_in(night))
        bench.drain(measure)
    found = {
        (alert.direction.value, int(alert.culprit_commit.sha[:7], 16) if alert.culprit_commit else None)
        for alert in series_alerts(session)
        if alert.status is not AlertStatus.INVALID and alert.confirmation == "confirmed"
    }
    # Counted as noise, the steps at 3 and 6 would make the series' noise about 18 % and its
    # threshold 26 %: incident 2's +46 % at night 9 would not even be a suspect.
    assert {("regression", 3), ("improvement", 6), ("regression", 8), ("improvement", 11)} <= found
    assert all(culprit in (3, 6, 8, 10, 11) for _, culprit in found)
