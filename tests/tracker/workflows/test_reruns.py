"""Measurement hygiene: the pure decision on hand-built conditions (clean, burner, throttled, steal),
and the tracker path: a flagged upload is stored and excluded, its job re-queued once per flagged
run, and comparison rounds take the re-run's value (the time budget of the re-runs:
``test_rerun_budget.py``). Runs on SQLite and PostgreSQL like the rest of the suite."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import job_result
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import create_comparison, repository_of_cases, resolve_candidate
from tracker.comparisons.summary import comparison_view
from tracker.enums import Arm, ComparisonState, JobReason, JobState, RunStatus, Verdict
from tracker.ingest.conditions import (
    CpuConditions,
    GpuSnapshot,
    RunConditions,
    assess_conditions,
    condition_flag,
    conditions_from_environment,
)
from tracker.ingest.results import IngestLimits
from tracker.models import Comparison, Job, Run, Runner
from tracker.models.runs import MeasurementFlag
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.series.state import load_series_runs
from tracker.settings import Settings
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.reruns import requeue_if_flagged
from tracker.workflows.results import store_job_result

CASE = "qwen-image-t2i-1024"
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)


# ------------------------------------------------------------------ the pure decision


def cpu(other_cores: float, cpu_count: int = 2, steal_pct: float | None = 0.1) -> RunConditions:
    return RunConditions(cpu=CpuConditions(cpu_count=cpu_count, other_cores=other_cores, steal_pct=steal_pct))


def gpus(before: tuple[str, ...], after: tuple[str, ...], index: int = 0) -> tuple[GpuSnapshot, ...]:
    return (
        GpuSnapshot(
            when="before", index=index, sm_clock_mhz=1980, max_sm_clock_mhz=1980, throttle_reasons=before
        ),
        GpuSnapshot(
            when="after", index=index, sm_clock_mhz=1410, max_sm_clock_mhz=1980, throttle_reasons=after
        ),
    )


def test_the_demos_own_background_is_clean() -> None:
    # The tracker and runner in one Python process took 0.02 cores during a toy run (measured).
    assert assess_conditions(cpu(0.02)) is None
    assert assess_conditions(cpu(0.3)) is None  # several times that is still not contention
    assert assess_conditions(RunConditions()) is None  # nothing recorded: an old runner or an import


def test_a_burner_beside_a_single_threaded_toy_on_two_cores_is_contention() -> None:
    flag = assess_conditions(cpu(0.92))
    assert flag is not None
    assert flag.kind is MeasurementFlag.CONTENTION
    assert flag.reason == "contention: other processes took 0.92 cores (46 % of 2) during the run"


def test_steps_timed_in_thread_cpu_time_are_flagged_for_contention_too() -> None:
    # The toy times each step by its thread's CPU time: another process's time slices are not in
    # it, but what a neighbour does to caches and memory bandwidth is, and the runner cannot tell
    # a spinning neighbour from a streaming one (docs/toy-noise.md).
    thread_cpu = RunConditions(cpu=CpuConditions(cpu_count=2, other_cores=0.92))
    flag = assess_conditions(thread_cpu)
    assert flag is not None
    assert flag.kind is MeasurementFlag.CONTENTION
    for other_cores, flagged in ((0.92, True), (0.06, False)):
        environment = {"conditions": {"cpu": {"cpu_count": 2, "other_cores": other_cores}}}
        stored = condition_flag(status=RunStatus.OK, environment=environment)
        assert (stored is not None and stored.kind is MeasurementFlag.CONTENTION) is flagged


def test_contention_needs_half_a_core_and_a_quarter_of_the_machine() -> None:
    assert assess_conditions(cpu(0.4, cpu_count=1)) is None  # 40 % of one core, but under half a core
    assert assess_conditions(cpu(1.0, cpu_count=128)) is None  # one busy shell on a big host
    assert assess_conditions(cpu(40.0, cpu_count=128)) is not None


def test_an_operator_can_turn_cpu_contention_off_and_steal_still_counts() -> None:
    assert assess_conditions(cpu(0.92), cpu_contention=False) is None
    steal = assess_conditions(cpu(0.92, steal_pct=12.0), cpu_contention=False)
    assert steal is not None
    assert steal.kind is MeasurementFlag.CPU_STEAL
    assert steal.reason == "CPU steal 12 %"  # the contention is not named either


def test_a_gpu_run_is_judged_by_its_gpus_not_by_the_hosts_other_benchmarks() -> None:
    busy_host = RunConditions(
        cpu=CpuConditions(cpu_count=2, other_cores=1.5, steal_pct=0.0), gpus=gpus(("gpu_idle",), ())
    )
    assert assess_conditions(busy_host) is None


def test_throttling_before_and_after_is_named_by_reason() -> None:
    flag = assess_conditions(RunConditions(gpus=gpus(("sw_thermal_slowdown",), ("sw_thermal_slowdown",))))
    assert flag is not None
    assert flag.kind is MeasurementFlag.GPU_THROTTLED
    assert flag.reason == "GPU throttled: sw_thermal_slowdown before/after (GPU 0)"
    mixed = assess_conditions(
        RunConditions(
            gpus=gpus(("gpu_idle", "hw_slowdown"), ("sw_power_cap",), index=3) + gpus((), (), index=1)
        )
    )
    assert mixed is not None
    assert mixed.reason == "GPU throttled: sw_power_cap after, hw_slowdown before (GPU 3)"


def test_idle_application_clocks_and_sync_boost_are_not_throttling() -> None:
    policy = ("gpu_idle", "applications_clocks_setting", "sync_boost")
    assert assess_conditions(RunConditions(gpus=gpus(policy, policy))) is None


def test_steal_and_several_problems_at_once() -> None:
    steal = assess_conditions(cpu(0.0, steal_pct=12.0))
    assert steal is not None
    assert steal.kind is MeasurementFlag.CPU_STEAL
    assert steal.reason == "CPU steal 12 %"
    assert assess_conditions(cpu(0.0, steal_pct=3.0)) is None
    both = assess_conditions(cpu(1.0, steal_pct=8.0))
    assert both is not None
    assert both.kind is MeasurementFlag.CONTENTION
    assert (
        both.reason == "contention: other processes took 1.00 cores (50 % of 2) during the run; CPU steal 8 %"
    )


def test_conditions_are_read_leniently() -> None:
    assert not conditions_from_environment({}).recorded
    assert not conditions_from_environment({"conditions": "junk"}).recorded
    junk = conditions_from_environment(
        {
            "conditions": {
                "cpu": {"cpu_count": "2", "other_cores": float("nan"), "error": "cannot read /proc: x"},
                "gpu": {"before": ["x", {"index": True, "throttle_reasons": "hw_slowdown"}], "after": None},
            }
        }
    )
    assert junk.cpu is None
    assert junk.errors == ("cpu: cannot read /proc: x",)
    assert junk.gpus == (GpuSnapshot(when="before", index=None),)
    assert assess_conditions(junk) is None
    read = conditions_from_environment(
        {"conditions": {"cpu": {"cpu_count": 2, "other_cores": 0.92, "loadavg_before": [1.0, "x", 0.5]}}}
    )
    assert read.cpu == CpuConditions(cpu_count=2, other_cores=0.92, loadavg_before=(1.0, 0.5))


# ------------------------------------------------------------------ the tracker path

BURNER: dict[str, Any] = {"conditions": {"cpu": {"cpu_count": 2, "other_cores": 0.92, "steal_pct": 0.1}}}
THROTTLED: dict[str, Any] = {
    "conditions": {
        "gpu": {
            "before": [{"index": 0, "sm_clock_mhz": 1980, "throttle_reasons": ["sw_thermal_slowdown"]}],
            "after": [{"index": 0, "sm_clock_mhz": 1410, "throttle_reasons": ["sw_thermal_slowdown"]}],
        }
    }
}
CLEAN: dict[str, Any] = {
    "conditions": {
        "cpu": {"cpu_count": 2, "other_cores": 0.02, "steal_pct": 0.0},
        "gpu": {"before": [{"index": 0, "throttle_reasons": ["gpu_idle"]}], "after": []},
    }
}


def runner(session: Session) -> Runner:
    return register_runner(
        session=session,
        name="h200-a",
        hardware=get_hardware_kind(session=session, name="H200"),
        gpu_count=8,
        labels={},
        version="t",
        host="h",
        token=None,
        now=T0,
    )


def run_next(
    session: Session,
    environment: dict[str, Any],
    value: float = 30.0,
    *,
    now: dt.datetime = T0,
    limits: IngestLimits = LIMITS,
) -> tuple[Job, Run]:
    """Claim the next job and upload one run of it measured under ``environment`` at ``now``."""
    agent = runner(session)
    job = workflow_jobs.claim(session=session, runner=agent, now=now)
    assert job is not None
    result = job_result(job.attempts, step_times_ms=[value] * 3, environment=environment)
    outcome = store_job_result(
        session=session, runner=agent, job_id=job.id, result=result, limits=limits, now=now
    )
    return job, outcome.run


def nightly(session: Session, sha: str = "aaaaaaa") -> Job:
    case = get_current_case(session=session, slug=CASE)
    repository = repository_of_cases(session=session, cases=[CASE])
    return enqueue_job(
        session=session,
        candidate=resolve_candidate(session=session, repository=repository, sha=sha),
        case=case,
        hardware=get_hardware_kind(session=session, name="H200"),
        reason=JobReason.NIGHTLY,
        purpose="2026-06-01",
    ).job


def queued(session: Session) -> list[Job]:
    return list(session.scalars(select(Job).where(Job.state == JobState.QUEUED).order_by(Job.id)))


def test_a_flagged_nightly_run_is_stored_excluded_and_its_job_queued_exactly_once(session: Session) -> None:
    original = nightly(session)
    job, run = run_next(session, THROTTLED, value=33.0)
    assert job.id == original.id
    assert job.state is JobState.DONE
    assert run.denoise_step_ms == 33.0  # stored, never lost
    assert run.measurement_flag is MeasurementFlag.GPU_THROTTLED
    assert run.excluded_reason == "GPU throttled: sw_thermal_slowdown before/after (GPU 0)"
    [rerun] = queued(session)
    assert run.rerun_job_id == rerun.id
    assert (rerun.candidate_id, rerun.case_id, rerun.hardware_kind_id) == (
        job.candidate_id,
        job.case_id,
        job.hardware_kind_id,
    )
    assert rerun.reason is JobReason.NIGHTLY
    assert rerun.priority == job.priority
    assert rerun.idempotency_key != job.idempotency_key
    # Reacting to the same run again (a retried upload) queues nothing more.
    assert requeue_if_flagged(session=session, job=job, run=run, now=T0) is rerun
    assert queued(session) == [rerun]
    # Detection never sees the flagged value.
    case = get_current_case(session=session, slug=CASE)
    kind = get_hardware_kind(session=session, name="H200")
    assert all(
        point.run_id != run.id
        for commit in load_series_runs(session=session, case=case, hardware=kind)
        for point in commit.runs
    )

    # The re-run is flagged too, after the re-run budget (15 minutes by default) is spent: kept and
    # excluded, saying how often it was tried, and not queued a third time.
    late = T0 + dt.timedelta(minutes=16)
    second_job, second = run_next(session, BURNER, now=late)
    assert second_job.id == rerun.id
    assert second.measurement_flag is MeasurementFlag.CONTENTION
    assert second.excluded_reason == (
        "contention: other processes took 0.92 cores (46 % of 2) during the run; "
        "flagged on all 2 tries in 960 s (budget 900 s)"
    )
    assert second.rerun_job_id is None
    assert queued(session) == []
    assert requeue_if_flagged(session=session, job=second_job, run=second, now=late) is None


def test_a_clean_run_is_counted_and_queues_nothing(session: Session) -> None:
    nightly(session)
    _, run = run_next(session, CLEAN)
    assert run.measurement_flag is None
    assert run.excluded_reason is None
    assert queued(session) == []


def test_with_cpu_contention_off_a_busy_cpu_run_is_stored_clean(session: Session) -> None:
    assert not IngestLimits.from_settings(Settings(flag_cpu_contention=False)).flag_cpu_contention
    assert IngestLimits.from_settings(Settings()).flag_cpu_contention
    nightly(session)
    shared_host = dataclasses.replace(LIMITS, flag_cpu_contention=False)
    _, run = run_next(session, BURNER, limits=shared_host)
    assert run.measurement_flag is None
    assert run.excluded_reason is None
    assert queued(session) == []
    nightly(session, sha="bbbbbbb")
    _, throttled = run_next(session, THROTTLED, limits=shared_host)
    assert throttled.measurement_flag is MeasurementFlag.GPU_THROTTLED  # GPUs are judged as before


def test_a_failed_run_is_not_flagged(session: Session) -> None:
    nightly(session)
    agent = runner(session)
    job = workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert job is not None
    result = job_result(
        job.attempts, status="failed", failure_reason="exited with code 1", environment=BURNER
    )
    run = store_job_result(
        session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0
    ).run
    assert run.measurement_flag is None
    assert run.excluded_reason is None


def comparison(session: Session, rounds: int = 2) -> Comparison:
    repository = repository_of_cases(session=session, cases=[CASE])
    base = resolve_candidate(session=session, repository=repository, sha="aaaaaaa")
    head = resolve_candidate(session=session, repository=repository, sha="aaaaaaa", patches=["#43601"])
    return create_comparison(
        session=session, base=base, head=head, cases=[CASE], rounds=rounds, max_rounds=rounds
    )


def test_a_flagged_arm_is_re_run_with_its_round_and_arm_and_the_re_run_counts(session: Session) -> None:
    compared = comparison(session)
    seen: list[tuple[Job, Run]] = []
    while queued(session):
        upcoming = queued(session)[0]
        first_try = (
            upcoming.comparison_round == 1
            and upcoming.arm is Arm.HEAD
            and not any(job.comparison_round == 1 and job.arm is Arm.HEAD for job, _ in seen)
        )
        value = 30.0 if upcoming.arm is Arm.BASE else 33.0
        seen.append(run_next(session, THROTTLED if first_try else CLEAN, value=99.0 if first_try else value))
        if first_try:
            flagged_job, flagged = seen[-1]
            [rerun] = [job for job in queued(session) if job.comparison_round == 1 and job.arm is Arm.HEAD]
            assert flagged.rerun_job_id == rerun.id
            assert (rerun.comparison_id, rerun.comparison_round, rerun.arm, rerun.alert_id) == (
                flagged_job.comparison_id,
                1,
                Arm.HEAD,
                flagged_job.alert_id,
            )
            assert rerun.candidate_id == flagged_job.candidate_id
            # The round waits for the re-run: the comparison cannot end on the flagged arm.
            view = comparison_view(session=session, comparison_id=compared.id)
            round_one = view.results[0].rounds[0]
            assert round_one.head.job is not None
            assert round_one.head.job.id == rerun.id
            assert not round_one.ended
    seen = [
        (job, run) for job, run in seen if job.reason is not JobReason.EVIDENCE
    ]  # the regression's profiles
    assert len(seen) == 5  # 2 rounds × 2 arms, and one re-run
    session.refresh(compared)
    assert compared.state is ComparisonState.DONE
    view = comparison_view(session=session, comparison_id=compared.id)
    rounds = view.results[0].rounds
    assert [(r.base.value_ms, r.head.value_ms) for r in rounds] == [(30.0, 33.0), (30.0, 33.0)]
    assert all(r.usable for r in rounds)  # the flagged 99 ms never reached the verdict
    assert view.results[0].result.verdict is Verdict.REGRESSION


def test_an_arm_flagged_until_the_budget_is_spent_makes_its_round_unusable(session: Session) -> None:
    compared = comparison(session, rounds=1)
    now = T0
    while queued(session):
        upcoming = queued(session)[0]
        now += dt.timedelta(minutes=6)
        run_next(session, BURNER if upcoming.arm is Arm.HEAD else CLEAN, now=now)
    jobs = list(session.scalars(select(Job).where(Job.comparison_id == compared.id)))
    # base, head, and the head's re-runs 6, 12 and 18 minutes after its first flagged try
    assert len(jobs) == 5
    assert {(job.comparison_round, job.arm) for job in jobs if job.arm is Arm.HEAD} == {(1, Arm.HEAD)}
    [round_one] = comparison_view(session=session, comparison_id=compared.id).results[0].rounds
    assert round_one.ended
    assert not round_one.usable
    assert round_one.head.run is None
    assert round_one.head.excluded is not None
    assert round_one.head.failure is not None
    assert "excluded: contention: other processes took 0.92 cores" in round_one.head.failure
    session.refresh(compared)
    assert compared.state is not ComparisonState.RUNNING
