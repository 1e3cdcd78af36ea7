"""Which nightly run a refuted suspect rested on (pure), the service excluding it, and the cap on a
suspect's paired rounds that a suite may raise per case and hardware kind."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.tracker.bench import Bench
from tests.tracker.detection.test_alerts import BASE_MS, commit_in, series_alerts, sha
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import parse_suite
from tracker.detection.odd_runs import odd_side
from tracker.enums import AlertStatus, ComparisonKind, JobReason
from tracker.ingest.files import EVIDENCE_EXCLUSION
from tracker.models import Commit, Comparison, Job, Run
from tracker.queue.jobs import PRIORITY

SUITE_TEXT = (SUITES / "sglang-diffusion.toml").read_text()


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


def test_a_nightly_run_far_above_its_commit_s_paired_rounds_is_measured_again(session: Session) -> None:
    """The demo's offload case at the custom-op fix: a 5 % improvement behind an interfered night.

    The fix's nightly run came out 60 % slow (the host slowed the whole process), and the paired
    rounds that followed ran while the slowdown wore off: too noisy. That nightly run lies far above
    every paired run of its commit, so it leaves detection and the commit is measured again before
    the next night; the real 5 % improvement then shows, and its own rounds confirm it.
    """
    bench = Bench(session)
    rng = random.Random(5)
    fix = 10
    slow_head = iter([1.50, 1.30, 0.96, 0.95])  # the slowdown wearing off over the first rounds
    nights_of_fix = 0

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        level = BASE_MS * (0.95 if index >= fix else 1.0)
        nonlocal nights_of_fix
        factor = 1.0
        if index == fix and job.reason is JobReason.NIGHTLY:
            nights_of_fix += 1
            factor = 1.6 if nights_of_fix == 1 else 1.0
        elif index == fix and job.reason is JobReason.CONFIRM:
            factor = next(slow_head, 0.95) / 0.95
        return level * factor * (1 + rng.gauss(0, 0.003))

    for index in range(fix + 1):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [slow] = session.scalars(select(Run).where(Run.excluded_reason.like("interfered with%"))).all()
    assert slow.commit.sha == sha(fix)
    # One alert per series and first bad commit: the suspect, retired, then asked anew.
    [alert] = series_alerts(session)
    reasons = [event.reason for event in alert.events]
    assert any("unconfirmed, needs more rounds than the cap" in reason for reason in reasons)
    assert any("measured again" in reason for reason in reasons)
    assert alert.first_bad_commit.sha == sha(fix)
    assert alert.direction.value == "improvement"
    assert alert.confirmation == "confirmed"
    assert alert.status is AlertStatus.OPEN


def test_a_too_noisy_suspect_does_not_absorb_a_later_change(session: Session) -> None:
    """The demo on a noisy host: a +4 % night at a neutral commit, its rounds too noisy to judge.

    Detection then no longer reports that small step, and three nights later incident 1 lands
    (+60 %). The too-noisy suspect was measured at its own commit by paired rounds: the new change
    is a suspect of its own, confirmed, not an update of the old one.
    """
    bench = Bench(session)
    rng = random.Random(6)
    noisy = iter([1.00, 1.12, 0.99, 1.13, 1.01, 1.11, 0.98, 1.14] * 4)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        level = BASE_MS * (1.6 if index >= 9 else 1.0)
        if index == 6 and job.reason is JobReason.NIGHTLY:
            return level * 1.04
        if index == 6 and job.reason is JobReason.CONFIRM:
            return level * next(noisy)
        return level * (1 + rng.gauss(0, 0.003))

    for index in range(10):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    by_commit = {alert.first_bad_commit.sha: alert for alert in series_alerts(session)}
    assert by_commit[sha(6)].confirmation == "too_noisy"
    assert by_commit[sha(9)].confirmation == "confirmed"
    assert by_commit[sha(9)].direction.value == "regression"


def test_a_suspect_whose_rounds_show_the_other_way_is_asked_anew_in_that_direction(session: Session) -> None:
    """The demo's compile case: incident 1 lands the night after a neutral night ran slow.

    Night 5 (neutral) ran 90 % slow and its own rounds could not run, so its run stayed in the
    series; night 6 brings a real +65 %, which next to night 5 looks like an improvement. Its paired
    rounds refute the improvement and show +65 %. The first bad run is the change's own evidence
    and stays; night 5's run lies far above commit 5's paired runs, so it leaves detection and
    commit 5 is measured again; the regression at commit 6 is then a suspect of its own, confirmed
    by rounds of its own.
    """
    bench = Bench(session)
    rng = random.Random(9)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        level = BASE_MS * (1.65 if index >= 6 else 1.0)
        if index == 5 and job.reason is JobReason.NIGHTLY and job.priority < PRIORITY[JobReason.CONFIRM]:
            level *= 1.9  # the first nightly run of commit 5, not its re-measurement
        if index == 5 and job.reason is JobReason.CONFIRM and job.arm is not None and job.arm.value == "head":
            return None  # commit 5's own rounds (where it is the first bad commit) could not run
        return level * (1 + rng.gauss(0, 0.003))

    for index in range(8):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    alerts = [alert for alert in series_alerts(session) if alert.first_bad_commit.sha == sha(6)]
    assert len(alerts) == 1
    [alert] = alerts
    assert (alert.direction.value, alert.confirmation, alert.status) == (
        "regression",
        "confirmed",
        AlertStatus.OPEN,
    )
    reasons = " | ".join(event.reason for event in alert.events)
    assert "the rounds show the commit slower" in reasons
    assert "a suspect again" in reasons
    assert "the_other_way" not in alert.evidence  # asked anew: a later refutation starts afresh
    excluded = session.scalars(select(Run).where(Run.excluded_reason.like("interfered with%"))).all()
    assert [run.commit.sha for run in excluded] == [sha(5)]


def speedup_with_a_slow_night(
    *, seed: int, speedup_at: int, slow_nightly: float
) -> Callable[[Commit, Job], float | None]:
    """A -30 % speed-up at commit ``speedup_at``; commit 6's nightly run ``slow_nightly`` times slow."""
    rng = random.Random(seed)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        level = BASE_MS * (0.7 if index >= speedup_at else 1.0)
        if index == 6 and job.reason is JobReason.NIGHTLY:
            level *= slow_nightly
        return level * (1 + rng.gauss(0, 0.003))

    return measure


def test_a_refuted_suspect_leaves_out_the_nightly_run_that_lay_above_its_own_paired_runs(
    session: Session,
) -> None:
    """The demo's offload case: the CFG speed-up (-30 %), then a neutral night that ran 19 % slow.

    Against the commits before it the speed-up's own run "stood apart", so the series alone would
    blame it; the paired rounds measured both commits at the new level, and only the neutral
    night's run lay far above its own commit's rounds: that run leaves detection.
    """
    bench = Bench(session)
    measure = speedup_with_a_slow_night(seed=10, speedup_at=5, slow_nightly=1.19)
    for index in range(7):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    refuted = [alert for alert in series_alerts(session) if alert.confirmation == "refuted"]
    assert [alert.first_bad_commit.sha for alert in refuted] == [sha(6)]
    excluded = session.scalars(
        select(Run).where(Run.excluded_reason.is_not(None), Run.excluded_reason != EVIDENCE_EXCLUSION)
    ).all()
    assert [run.commit.sha for run in excluded] == [sha(6)]  # the speed-up's profiled re-runs aside
    speedup = [alert for alert in series_alerts(session) if alert.first_bad_commit.sha == sha(5)]
    assert [alert.confirmation for alert in speedup] == ["confirmed"]


def test_a_suspect_refuted_on_its_last_good_run_does_not_raise_a_confirmed_step_twice(
    session: Session,
) -> None:
    """The demo's compile case: the CFG speed-up confirmed, its own nightly run 7 % slow.

    The next (neutral) night looked 6 % faster than that run; its rounds refuted it and left the
    speed-up's slow run out. Judged against the commit before the speed-up, the neutral commit
    would be the speed-up again: a second alert for one change. The confirmed alert stands for it.
    """
    bench = Bench(session)
    measure = speedup_with_a_slow_night(seed=11, speedup_at=6, slow_nightly=1.07)
    for index in range(9):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    improvements = [
        alert
        for alert in series_alerts(session)
        if alert.direction.value == "improvement" and alert.confirmation == "confirmed"
    ]
    assert [alert.first_bad_commit.sha for alert in improvements] == [sha(6)]
    refuted = [alert for alert in series_alerts(session) if alert.confirmation == "refuted"]
    assert [alert.first_bad_commit.sha for alert in refuted] == [sha(7)]


QWEN_SLUG = 'slug = "qwen-image-t2i-1024"'


def capped(session: Session, cap: str) -> None:
    """Sync the tests' suite with ``cap`` (TOML lines) in the Qwen-Image case the bench measures."""
    text = SUITE_TEXT.replace(QWEN_SLUG, f"{QWEN_SLUG}\n{cap}", 1)
    sync_suites(session=session, suites=[parse_suite(text)])


def confirmations(session: Session) -> list[Comparison]:
    return list(session.scalars(select(Comparison).where(Comparison.kind == ComparisonKind.CONFIRMATION)))


@pytest.mark.parametrize(
    ("cap", "max_rounds", "said"),
    [
        ("", 16, "up to 16 rounds (32 runs), decide"),
        (
            "confirmation_max_rounds = 32",
            32,
            "up to 32 rounds (64 runs, the cap qwen-image-t2i-1024 sets on H200), decide",
        ),
        (
            "confirmation_max_rounds = 24\nconfirmation_caps = { H200 = 40 }",
            40,
            "up to 40 rounds (80 runs, the cap qwen-image-t2i-1024 sets on H200), decide",
        ),
    ],
)
def test_a_suspect_s_paired_rounds_may_grow_to_its_case_s_cap_on_its_hardware(
    session: Session, cap: str, max_rounds: int, said: str
) -> None:
    capped(session, cap)
    bench = Bench(session)
    rng = random.Random(3)

    def measure(commit: Commit, job: Job) -> float | None:
        return BASE_MS * (1.1 if int(commit.sha[:7], 16) >= 6 else 1.0) * (1 + rng.gauss(0, 0.003))

    for index in range(7):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [alert] = series_alerts(session)
    [confirmation] = confirmations(session)
    assert (confirmation.alert_id, confirmation.max_rounds) == (alert.id, max_rounds)
    assert any(
        event.reason.startswith("suspect: 2 paired rounds") and said in event.reason for event in alert.events
    )
    assert alert.confirmation == "confirmed"


@pytest.mark.parametrize(
    ("cap", "max_rounds", "outcome"),
    [("", 16, "too_noisy"), ("confirmation_caps = { H200 = 32 }", 32, "confirmed")],
)
def test_a_suspect_too_noisy_for_16_rounds_is_settled_under_a_raised_cap(
    session: Session, cap: str, max_rounds: int, outcome: str
) -> None:
    """Issue 27: a real +3 % whose paired runs are 3 % noisy. Under the policy's 16 rounds it stays
    unconfirmed, "needs more rounds than the cap of 16"; with the case's cap on H200 raised to 32,
    the same runs grow past 16 rounds and confirm it."""
    capped(session, cap)
    bench = Bench(session)
    rng = random.Random(2)

    def measure(commit: Commit, job: Job) -> float | None:
        level = BASE_MS * (1.03 if int(commit.sha[:7], 16) >= 6 else 1.0)
        return level * (1 + rng.gauss(0, 0.03 if job.reason is JobReason.CONFIRM else 0.003))

    for index in range(7):
        bench.nightly(commit_in(index))
        bench.drain(measure, limit=400)
    [alert] = series_alerts(session)
    [confirmation] = confirmations(session)
    assert (alert.confirmation, confirmation.max_rounds) == (outcome, max_rounds)
    if outcome == "too_noisy":
        assert "needs more rounds than the cap of 16" in confirmation.results[0].note
    else:
        assert 16 < confirmation.rounds_scheduled <= 32
