"""Runner faults with real processes: a ``perftrack runner`` killed with SIGKILL or frozen with
SIGSTOP mid-benchmark, one whose wall clock is hours off, and the tracker server killed while a
runner uploads. Each test checks that nothing is lost and nothing is stored twice."""

from __future__ import annotations

import datetime as dt
import re
import signal
from pathlib import Path

import httpx
import pytest

from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.workloads.process import group_alive
from runners.workloads.sglang import SglangWorkload
from tests.faults.conftest import Fleet
from tests.faults.harness import BENCH_COMMAND
from tests.leases import UNEXPIRING_LEASE_S, run_out_lease
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # real tracker and runner processes, killed, frozen and restarted

SKEWED_CLOCK = Path(__file__).resolve().parent / "skewed_clock"
# "2026-11-29 16:26:08,620 INFO ..." (local time) or "2026-11-29T16:26:08.620Z INFO ..." (UTC).
LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)[.,]\d+(Z?) ", re.MULTILINE)


def outcomes(job: dict[str, object]) -> list[tuple[str, str]]:
    history = job["attempt_history"]
    assert isinstance(history, list)
    return [(entry["outcome"], entry["runner"]) for entry in history]


def test_runner_killed_mid_benchmark_is_replaced_and_its_benchmark_reaped(fleet: Fleet) -> None:
    # Leases run out only when the test says so: runner-b's never does, however busy the machine.
    tracker = fleet.tracker(lease_seconds=UNEXPIRING_LEASE_S)
    job = tracker.enqueue(tracker.upstream.main[0])
    doomed = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "300"})
    wait_until(doomed.started_file.exists, 60, "runner-a's benchmark to start")
    orphan = int(doomed.pgid_file.read_text())
    doomed.signal(signal.SIGKILL)
    doomed.wait(timeout_s=10)
    assert tracker.job(job)["state"] == "leased"  # nobody told the tracker
    run_out_lease(tracker.database_url, job)  # the killed runner's heartbeats are long overdue

    fleet.runner("runner-b")
    wait_until(lambda: tracker.job(job)["state"] == "done", 90, "runner-b to finish the job")
    assert outcomes(tracker.job(job)) == [("lease expired", "runner-a"), ("done", "runner-b")]
    assert [(run["status"], run["attempt"], run["runner"]) for run in tracker.runs_of(job)] == [
        ("ok", 2, "runner-b")
    ]

    # The benchmark outlived its agent (its own session) and still holds its "GPU".
    assert group_alive(orphan)
    doomed.once = True
    doomed.start()  # the same runner, restarted on the same workdir: it reaps first
    assert doomed.wait(timeout_s=60) == 0
    wait_until(lambda: not group_alive(orphan), 10, "the orphaned benchmark to die")
    assert f"killed process group {orphan}" in doomed.log()
    assert not doomed.pgid_file.exists()
    assert len(tracker.runs_of(job)) == 1


def test_frozen_runner_loses_its_lease_and_its_late_upload_is_refused_once(fleet: Fleet) -> None:
    tracker = fleet.tracker(lease_seconds=UNEXPIRING_LEASE_S)
    job = tracker.enqueue(tracker.upstream.main[0])
    frozen = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "2"})
    wait_until(frozen.started_file.exists, 60, "runner-a's benchmark to start")
    frozen.signal(signal.SIGSTOP)  # no heartbeats from now on; its benchmark finishes meanwhile
    run_out_lease(tracker.database_url, job)  # while it is frozen, its lease runs out

    fleet.runner("runner-b")
    wait_until(lambda: tracker.job(job)["state"] == "done", 90, "runner-b to take over and finish")
    assert outcomes(tracker.job(job)) == [("lease expired", "runner-a"), ("done", "runner-b")]

    frozen.signal(signal.SIGCONT)  # it wakes up and uploads the result of attempt 1
    wait_until(lambda: bool(frozen.rejected()), 60, "runner-a to give up its stale upload")
    [rejected] = frozen.rejected()
    assert rejected.name == f"job-{job}-attempt-1.json"
    reason = rejected.with_suffix(".reason.txt").read_text()
    assert "tracker refused the attempt" in reason
    assert "attempt 1" in reason
    assert frozen.pending() == []
    # Not retried: after the refusal the agent polls on, and never posts that result again.
    claims_before = frozen.log().count("/claim")
    wait_until(lambda: frozen.log().count("/claim") > claims_before + 2, 30, "runner-a to poll again")
    # One upload, single or in a batch (runner-a uploads nothing else).
    assert frozen.log().count(f"/jobs/{job}/result") + frozen.log().count("/jobs/results") == 1
    runs = tracker.runs_of(job)
    assert [(run["status"], run["attempt"], run["runner"]) for run in runs] == [("ok", 2, "runner-b")]


def test_leases_follow_the_tracker_clock_not_a_runner_clock_hours_off(fleet: Fleet) -> None:
    offset = dt.timedelta(hours=-7)
    # The runner heartbeats every lease / 3 = 10 s, and the benchmark outlasts that: the lease is
    # extended once while it runs (on a clock 7 h behind, a runner-clock lease would have ended 7 h
    # ago, and the upload be refused). A 30 s lease leaves 20 s of slack for a late heartbeat on a
    # busy machine, where a 5 s lease left 3.
    lease_s = 30
    tracker = fleet.tracker(lease_seconds=lease_s)
    job = tracker.enqueue(tracker.upstream.main[1])
    skewed = fleet.runner(
        "runner-skewed",
        bench_env={"FAULT_BENCH_SLEEP_S": "14"},
        extra_env={"PYTHONPATH": str(SKEWED_CLOCK), "FAULT_CLOCK_OFFSET_S": str(offset.total_seconds())},
    )
    wait_until(skewed.started_file.exists, 60, "the benchmark to start")
    state = tracker.job(job)
    assert state["state"] == "leased"
    expires = dt.datetime.fromisoformat(state["lease_expires_at"])
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=dt.UTC)
    real_now = dt.datetime.now(dt.UTC)
    assert real_now - dt.timedelta(minutes=1) < expires <= real_now + dt.timedelta(seconds=lease_s)

    wait_until(lambda: tracker.job(job)["state"] == "done", 90, "the skewed runner to finish")
    assert outcomes(tracker.job(job)) == [("done", "runner-skewed")]  # its lease never ran out
    assert f"/jobs/{job}/heartbeat" in skewed.log()  # ... and was extended on the tracker's clock
    runs = tracker.runs_of(job)
    assert [(run["status"], run["attempt"]) for run in runs] == [("ok", 1)]
    # The runner really lived seven hours in the past: its own log stamps say so.
    stamp = LOG_STAMP.search(skewed.log())
    assert stamp is not None, skewed.log()[-2000:]
    zone = dt.UTC if stamp.group(3) else dt.datetime.now().astimezone().tzinfo
    logged = dt.datetime.strptime(f"{stamp.group(1)} {stamp.group(2)}", "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=zone
    )
    assert abs(dt.datetime.now(dt.UTC) - logged + offset) < dt.timedelta(minutes=10)


def test_results_wait_in_the_spool_while_the_tracker_restarts_and_arrive_once(fleet: Fleet) -> None:
    # The lease outlives the restart, so the attempt is still the live one when the tracker is back.
    tracker = fleet.tracker(lease_seconds=UNEXPIRING_LEASE_S)
    jobs = [tracker.enqueue(sha) for sha in tracker.upstream.main[:2]]
    runner = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "2"})
    wait_until(runner.started_file.exists, 60, "the first benchmark to start")
    tracker.kill(signal.SIGKILL)

    wait_until(lambda: bool(runner.pending()), 60, "the result to be spooled while the tracker is down")
    assert [path.name for path in runner.pending()] == [f"job-{jobs[0]}-attempt-1.json"]
    assert tracker.runs_of(jobs[0]) == []

    tracker.start()  # same port, same database
    wait_until(
        lambda: all(tracker.job(job)["state"] == "done" for job in jobs), 120, "both jobs to be delivered"
    )
    for job in jobs:
        assert outcomes(tracker.job(job)) == [("done", "runner-a")]
        assert [(run["status"], run["attempt"]) for run in tracker.runs_of(job)] == [("ok", 1)]
    assert runner.pending() == []
    assert runner.rejected() == []


class Outage(httpx.HTTPTransport):
    """Refuses the first ``refusals`` connections, as a tracker that is not up yet does."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals
        self.refused = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.refused < self.refusals:
            self.refused += 1
            raise httpx.ConnectError("connection refused", request=request)
        return super().handle_request(request)


def test_a_runner_started_during_an_outage_waits_for_the_tracker(fleet: Fleet, tmp_path: Path) -> None:
    tracker = fleet.tracker()
    job = tracker.enqueue(tracker.upstream.main[2])
    outage = Outage(refusals=6)  # three registrations in a row fail after their retries
    client = TrackerClient(tracker.url, tracker.runner_token, retries=1, backoff_s=0.01, transport=outage)
    workdir = tmp_path / "late"
    agent = Agent(
        AgentConfig(name="late", hardware="cpu", gpus=1, workdir=workdir, poll_interval_s=0.1),
        client,
        CandidateBuilder(workdir),
        {"sglang": SglangWorkload(generate_executable=(*BENCH_COMMAND.split(), "generate"), probe=None)},
    )
    try:
        assert agent.run(once=True) == 0
    finally:
        client.close()
    assert outage.refused == 6
    assert outcomes(tracker.job(job)) == [("done", "late")]
    assert [(run["status"], run["attempt"]) for run in tracker.runs_of(job)] == [("ok", 1)]
