"""Runner faults with real processes: a ``perftrack runner`` killed with SIGKILL or frozen with
SIGSTOP mid-benchmark, one whose wall clock is hours off, and the tracker server killed while a
runner uploads. Each test checks that nothing is lost and nothing is stored twice."""

from __future__ import annotations

import datetime as dt
import re
import signal
from pathlib import Path

import httpx

from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.workloads.process import group_alive
from runners.workloads.sglang import SglangWorkload
from tests.faults.conftest import Fleet
from tests.faults.harness import BENCH_COMMAND, wait_for

SKEWED_CLOCK = Path(__file__).resolve().parent / "skewed_clock"
# "2026-11-29 16:26:08,620 INFO ..." (local time) or "2026-11-29T16:26:08.620Z INFO ..." (UTC).
LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)[.,]\d+(Z?) ", re.MULTILINE)


def outcomes(job: dict[str, object]) -> list[tuple[str, str]]:
    history = job["attempt_history"]
    assert isinstance(history, list)
    return [(entry["outcome"], entry["runner"]) for entry in history]


def test_runner_killed_mid_benchmark_is_replaced_and_its_benchmark_reaped(fleet: Fleet) -> None:
    tracker = fleet.tracker(lease_seconds=5)
    job = tracker.enqueue(tracker.upstream.main[0])
    doomed = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "300"})
    wait_for(doomed.started_file.exists, 60, "runner-a's benchmark to start")
    orphan = int(doomed.pgid_file.read_text())
    doomed.signal(signal.SIGKILL)
    doomed.wait(timeout_s=10)
    assert tracker.job(job)["state"] == "leased"  # nobody told the tracker

    fleet.runner("runner-b")
    wait_for(lambda: tracker.job(job)["state"] == "done", 90, "runner-b to finish the job")
    assert outcomes(tracker.job(job)) == [("lease expired", "runner-a"), ("done", "runner-b")]
    assert [(run["status"], run["attempt"], run["runner"]) for run in tracker.runs_of(job)] == [
        ("ok", 2, "runner-b")
    ]

    # The benchmark outlived its agent (its own session) and still holds its "GPU".
    assert group_alive(orphan)
    doomed.once = True
    doomed.start()  # the same runner, restarted on the same workdir: it reaps first
    assert doomed.wait(timeout_s=60) == 0
    wait_for(lambda: not group_alive(orphan), 10, "the orphaned benchmark to die")
    assert f"killed process group {orphan}" in doomed.log()
    assert not doomed.pgid_file.exists()
    assert len(tracker.runs_of(job)) == 1


def test_frozen_runner_loses_its_lease_and_its_late_upload_is_refused_once(fleet: Fleet) -> None:
    tracker = fleet.tracker(lease_seconds=5)
    job = tracker.enqueue(tracker.upstream.main[0])
    frozen = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "2"})
    wait_for(frozen.started_file.exists, 60, "runner-a's benchmark to start")
    frozen.signal(signal.SIGSTOP)  # no heartbeats from now on; its benchmark finishes meanwhile

    fleet.runner("runner-b")
    wait_for(lambda: tracker.job(job)["state"] == "done", 90, "runner-b to take over and finish")
    assert outcomes(tracker.job(job)) == [("lease expired", "runner-a"), ("done", "runner-b")]

    frozen.signal(signal.SIGCONT)  # it wakes up and uploads the result of attempt 1
    wait_for(lambda: bool(frozen.rejected()), 60, "runner-a to give up its stale upload")
    [rejected] = frozen.rejected()
    assert rejected.name == f"job-{job}-attempt-1.json"
    reason = rejected.with_suffix(".reason.txt").read_text()
    assert "tracker refused the attempt" in reason
    assert "attempt 1" in reason
    assert frozen.pending() == []
    # Not retried: after the refusal the agent polls on, and never posts that result again.
    claims_before = frozen.log().count("/claim")
    wait_for(lambda: frozen.log().count("/claim") > claims_before + 2, 30, "runner-a to poll again")
    assert frozen.log().count(f"/jobs/{job}/result") == 1
    runs = tracker.runs_of(job)
    assert [(run["status"], run["attempt"], run["runner"]) for run in runs] == [("ok", 2, "runner-b")]


def test_leases_follow_the_tracker_clock_not_a_runner_clock_hours_off(fleet: Fleet) -> None:
    offset = dt.timedelta(hours=-7)
    tracker = fleet.tracker(lease_seconds=5)
    job = tracker.enqueue(tracker.upstream.main[1])
    skewed = fleet.runner(
        "runner-skewed",
        # Longer than the lease: the job is kept only if heartbeats extend it on the tracker's clock.
        bench_env={"FAULT_BENCH_SLEEP_S": "8"},
        extra_env={"PYTHONPATH": str(SKEWED_CLOCK), "FAULT_CLOCK_OFFSET_S": str(offset.total_seconds())},
    )
    wait_for(skewed.started_file.exists, 60, "the benchmark to start")
    state = tracker.job(job)
    assert state["state"] == "leased"
    expires = dt.datetime.fromisoformat(state["lease_expires_at"])
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=dt.UTC)
    real_now = dt.datetime.now(dt.UTC)
    assert real_now - dt.timedelta(minutes=1) < expires <= real_now + dt.timedelta(seconds=5)

    wait_for(lambda: tracker.job(job)["state"] == "done", 90, "the skewed runner to finish")
    assert outcomes(tracker.job(job)) == [("done", "runner-skewed")]  # its lease never ran out
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
    tracker = fleet.tracker(lease_seconds=60)
    jobs = [tracker.enqueue(sha) for sha in tracker.upstream.main[:2]]
    runner = fleet.runner("runner-a", bench_env={"FAULT_BENCH_SLEEP_S": "2"})
    wait_for(runner.started_file.exists, 60, "the first benchmark to start")
    tracker.kill(signal.SIGKILL)

    wait_for(lambda: bool(runner.pending()), 60, "the result to be spooled while the tracker is down")
    assert [path.name for path in runner.pending()] == [f"job-{jobs[0]}-attempt-1.json"]
    assert tracker.runs_of(jobs[0]) == []

    tracker.start()  # same port, same database
    wait_for(
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
