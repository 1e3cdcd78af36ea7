"""Where the demo's time went: a job's span split into its parts from the runner's timings, the
idle gaps of each phase, jobs counted per phase by what they were for, and the loader on a real
database (a flagged run's re-run counts as a re-run)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy.orm import Session

from perftrack.demo.report import print_time_table
from perftrack.demo.timing import (
    IDLE,
    JobKind,
    JobTiming,
    Phase,
    breakdown,
    job_kind,
    job_parts,
    load_job_timings,
)
from tests.factories import job_result
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import repository_of_cases, resolve_candidate
from tracker.enums import ComparisonKind, JobReason
from tracker.ingest.results import IngestLimits
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result

T0 = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
WARMED_UP: dict[str, Any] = {
    "timings": {
        "build_s": 0.5,
        "quiet_wait_s": 0.25,
        "workload_s": 4.0,
        "process_s": 3.5,
        "startup_s": 0.75,
        "warmup_s": 2.0,
        "after_warmup_s": 0.75,
    }
}


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_a_warmed_up_job_splits_into_every_part_and_the_rest_is_the_upload() -> None:
    parts = job_parts(WARMED_UP, e2e_ms=500.0, span_s=5.0)
    assert parts == {
        "build": 0.5,
        "quiet_wait": 0.25,
        "startup": 0.75,
        "warmup": 2.0,
        "measured": 0.5,
        "teardown": 0.25,
        "runner": 0.5,  # the workload's time around its process: probes, the output read
        "upload": 0.25,  # what the runner's figures leave of the lease-to-finish span
    }
    assert sum(parts.values()) == pytest.approx(5.0)


def test_a_run_from_an_older_runner_is_read_from_its_conditions() -> None:
    old = {"conditions": {"quiet_wait": {"waited_s": 10.27}, "cpu": {"window_s": 3.324}}}
    parts = job_parts(old, e2e_ms=700.0, span_s=14.0)
    assert parts["quiet_wait"] == 10.27
    assert parts["process"] == 3.324
    assert parts["upload"] == pytest.approx(14.0 - 10.27 - 3.324)
    # Nothing recorded at all (a failed build): the whole span is the upload's part.
    assert job_parts({"timings": "junk"}, e2e_ms=None, span_s=2.0)["upload"] == 2.0


def test_a_re_run_counts_as_a_re_run_then_the_comparison_then_the_reason() -> None:
    assert job_kind(JobReason.NIGHTLY, None, rerun=True) is JobKind.RERUN
    assert job_kind(JobReason.PR, ComparisonKind.CALIBRATION, rerun=False) is JobKind.CALIBRATION
    assert job_kind(JobReason.CONFIRM, ComparisonKind.CONFIRMATION, rerun=False) is JobKind.CONFIRMATION
    assert job_kind(JobReason.BISECT, ComparisonKind.BISECT, rerun=False) is JobKind.BISECTION
    assert job_kind(JobReason.BISECT, None, rerun=False) is JobKind.BISECTION
    assert job_kind(JobReason.EVIDENCE, None, rerun=False) is JobKind.EVIDENCE
    assert job_kind(JobReason.MANUAL, None, rerun=False) is JobKind.OTHER


def job(number: int, kind: JobKind, leased: float, finished: float, queued: float = 0.0) -> JobTiming:
    span = finished - leased
    return JobTiming(
        number, kind, at(queued), at(leased), at(finished), {"warmup": span / 2, "upload": span / 2}
    )


def test_idle_gaps_fill_each_phase_and_jobs_are_counted_where_they_were_leased() -> None:
    night = Phase("night 1/2", at(0), at(20))
    comparison = Phase("comparison", at(30), at(40))
    jobs = [
        job(1, JobKind.NIGHTLY, 1, 5),
        job(2, JobKind.NIGHTLY, 5, 9),
        job(3, JobKind.CONFIRMATION, 12, 18, queued=6),
        job(4, JobKind.RERUN, 18, 19, queued=17),
        job(5, JobKind.COMPARISON, 30, 38, queued=29),
        job(6, JobKind.COMPARISON, 25, 26),  # between the phases: left out
    ]
    spent = breakdown(jobs, [night, comparison])
    assert spent.wall_s == 30
    # Night: 1 s before job 1, 3 s before job 3, 1 s after job 4; comparison: 2 s after job 5.
    assert spent.total_s[IDLE] == pytest.approx(7.0)
    assert spent.total_s["warmup"] + spent.total_s["upload"] == pytest.approx(23.0)
    assert spent.total_s["warmup"] + spent.total_s["upload"] + spent.total_s[IDLE] == spent.wall_s
    assert spent.median_s["warmup"] == 2.0  # spans 4, 4, 6, 1, 8: median 4
    assert [dict(phase.counts) for phase in spent.phases] == [
        {JobKind.NIGHTLY: 2, JobKind.CONFIRMATION: 1, JobKind.RERUN: 1},
        {JobKind.COMPARISON: 1},
    ]
    assert [phase.jobs for phase in spent.phases] == [4, 1]
    assert spent.queue_wait_median_s == 1.0  # waits 1, 5, 6, 1, 1
    assert spent.queue_wait_max_s == 6.0
    console = Console(width=150, record=True)
    print_time_table(spent, console)
    text = console.export_text()
    assert "compile warmup" in text
    assert "between jobs (the tracker storing and reacting, the next claim)" in text
    assert "night 1/2" in text


def test_the_loader_reads_each_job_its_runs_timings_and_its_re_run(session: Session) -> None:
    kind = get_hardware_kind(session=session, name="H200")
    agent = register_runner(
        session=session,
        name="h",
        hardware=kind,
        gpu_count=8,
        labels={},
        version="t",
        host="h",
        token=None,
        now=T0,
    )
    repository = repository_of_cases(session=session, cases=["qwen-image-t2i-1024"])
    enqueue_job(
        session=session,
        candidate=resolve_candidate(session=session, repository=repository, sha="aaaaaaa"),
        case=get_current_case(session=session, slug="qwen-image-t2i-1024"),
        hardware=kind,
        reason=JobReason.NIGHTLY,
    )
    throttled = {"gpu": {"before": [{"index": 0, "throttle_reasons": ["hw_slowdown"]}], "after": []}}
    limits = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
    for leased, environment in ((10.0, {**WARMED_UP, "conditions": throttled}), (20.0, WARMED_UP)):
        claimed = workflow_jobs.claim(session=session, runner=agent, now=at(leased))
        assert claimed is not None
        result = job_result(claimed.attempts, environment=environment, e2e_ms=500.0)
        store_job_result(
            session=session, runner=agent, job_id=claimed.id, result=result, limits=limits, now=at(leased + 6)
        )
    first, rerun = load_job_timings(session=session)
    assert (first.kind, rerun.kind) == (JobKind.NIGHTLY, JobKind.RERUN)
    assert (first.leased_at, first.finished_at) == (at(10), at(16))
    assert first.parts["warmup"] == 2.0
    assert first.parts["upload"] == pytest.approx(6.0 - 4.75)
    assert (rerun.leased_at, rerun.finished_at) == (at(20), at(26))
