"""The runner agent against a real tracker (uvicorn on a free port), a real git repository and a
fake ``sglang`` executable that replays recorded logs: successes, every kind of failure, the spool,
and two agents racing, one of them killed with SIGKILL mid-job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.workloads.process import group_alive
from runners.workloads.sglang import SglangWorkload
from tests.leases import UNEXPIRING_LEASE_S, run_out_lease
from tests.runners.agent_env import FAKE_SGLANG, ROOT, Tracker, Upstream, make_upstream, tracker
from tests.waiting import wait_until

# A live tracker, runner agents and runner processes. The claims they make are the dialect-specific
# part, and tests/tracker/queue/test_jobs.py, tests/web/api/test_claims_wait.py and
# tests/faults/test_claims.py cover them on both databases.
pytestmark = pytest.mark.slow


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return make_upstream(tmp_path)


@pytest.fixture
def live(migrated_db_url: str, tmp_path: Path, upstream: Upstream) -> Iterator[Tracker]:
    # Leases run out only when a test says so (run_out_lease), never because the machine is busy.
    with tracker(migrated_db_url, tmp_path, upstream, lease_seconds=UNEXPIRING_LEASE_S) as live_tracker:
        yield live_tracker


def make_agent(
    live: Tracker,
    workdir: Path,
    scenario: str = "ok",
    name: str = "cpu-1",
    transport: httpx.BaseTransport | None = None,
    era: str = "current",
) -> Agent:
    workload = SglangWorkload(
        generate_executable=(*FAKE_SGLANG.split(), "generate"),
        extra_env={"FAKE_SGLANG_SCENARIO": scenario, "FAKE_SGLANG_ERA": era},
        probe=None,
        kill_grace_s=1.0,
    )
    client = TrackerClient(live.url, live.token_for(name), retries=2, backoff_s=0.05, transport=transport)
    return Agent(
        AgentConfig(name=name, hardware="cpu", gpus=1, workdir=workdir, poll_interval_s=0.2),
        client,
        CandidateBuilder(workdir),
        {"sglang": workload},
    )


def run_detail(live: Tracker, job_id: int) -> dict[str, object]:
    runs = live.runs_of(job_id)
    assert len(runs) == 1, runs
    detail: dict[str, object] = httpx.get(f"{live.url}/api/v1/runs/{runs[0]['id']}").json()
    return detail


def test_an_option_the_commit_does_not_accept_is_a_setup_failure(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    sha = upstream.main[2]
    job_id = live.enqueue(sha, case="fake-t2i-offload")
    assert make_agent(live, tmp_path / "work", era="legacy").run(once=True) == 0
    job = live.job(job_id)
    assert job["state"] == "failed"
    reason = str(job["failure_reason"])
    assert reason.startswith("setup failed: "), reason
    assert f"`fake_sglang.py generate` at {sha[:12]} has no option --offload-during-compile" in reason
    run = run_detail(live, job_id)
    assert run["status"] == "failed"
    assert run["failure_reason"] == reason
    assert run["denoise_step_ms"] is None  # never a measurement
    assert "--offload-during-compile" in str(run["command"])  # what the case asked for, shown
    # The same case on a commit whose sglang has the option (the current release) runs.
    ok = live.enqueue(upstream.main[1], case="fake-t2i-offload")
    assert make_agent(live, tmp_path / "work2").run(once=True) == 0
    assert live.job(ok)["state"] == "done"


def test_runs_a_plain_and_a_stacked_candidate(live: Tracker, upstream: Upstream, tmp_path: Path) -> None:
    plain = live.enqueue(upstream.main[2])
    stacked = live.enqueue(upstream.main[2], patches=[upstream.good_pr])
    assert make_agent(live, tmp_path / "work").run(once=True) == 0
    for job_id in (plain, stacked):
        assert live.job(job_id)["state"] == "done"
    run = run_detail(live, plain)
    assert run["status"] == "ok"
    assert run["denoise_step_count"] == 50
    assert len(run["step_times_ms"]) == 50  # type: ignore[arg-type]
    assert run["denoise_step_basis"] == "median"
    assert f"SGLANG_GIT_COMMIT={upstream.main[2]}" in str(run["command"])
    assert "--enable-torch-compile" in str(run["command"])
    assert run["commit"]["title"] == "Change 2"  # type: ignore[index]
    assert run["commit"]["committed_at_estimated"] is False  # type: ignore[index]
    # Where the job's time went on the runner: each part timed, none longer than the whole workload.
    timings = run["environment"]["timings"]  # type: ignore[index]
    assert set(timings) == {"build_s", "quiet_wait_s", "workload_s"}  # no probe here: no process phases
    assert timings["quiet_wait_s"] < 0.1  # this agent does not wait for a quiet machine
    assert 0 < timings["workload_s"] < 600
    assert timings["build_s"] > 0
    stacked_run = run_detail(live, stacked)
    assert stacked_run["candidate_label"] == f"{upstream.main[2][:7]} + #7"
    assert stacked_run["patches_applied"] == ["refs/pull/7/head"]
    assert stacked_run["tree_sha"]
    assert (stacked_run["job_id"], stacked_run["attempt"]) == (stacked, 1)
    page = httpx.get(f"{live.url}/runs/{stacked_run['id']}").text
    assert "applied: refs/pull/7/head" in page
    assert not (tmp_path / "work" / "worktrees" / "upstream").exists() or not any(
        (tmp_path / "work" / "worktrees" / "upstream").iterdir()
    )


def test_a_patch_that_does_not_apply_fails_the_job_with_a_reason(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    job = live.enqueue(upstream.main[2], patches=[upstream.bad_pr])
    follow_up = live.enqueue(upstream.main[1])
    make_agent(live, tmp_path / "work").run(once=True)
    failed = live.job(job)
    assert failed["state"] == "failed"
    assert "refs/pull/8/head" in str(failed["failure_reason"])
    assert upstream.main[2][:7] in str(failed["failure_reason"])
    assert live.job(follow_up)["state"] == "done"  # the agent went on


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("crash", "exit"),
        ("oom_kill", "SIGKILL"),
        ("no_timing", "no denoising stage"),
        ("hang", "timed out after 10 s"),
    ],
)
def test_benchmark_failures_are_failed_runs_with_their_log(
    live: Tracker, upstream: Upstream, tmp_path: Path, scenario: str, reason: str
) -> None:
    job = live.enqueue(upstream.main[0])
    make_agent(live, tmp_path / "work", scenario=scenario).run(once=True)
    state = live.job(job)
    assert state["state"] == "failed"
    assert reason in str(state["failure_reason"])
    run = run_detail(live, job)
    assert run["status"] == "failed"
    assert run["denoise_step_ms"] is None
    assert httpx.get(f"{live.url}{run['log_url']}").text != "" or scenario == "hang"


UPLOADS = ("/result", "/jobs/results")  # one attempt's result, or a batch of them


class FlakyTransport(httpx.HTTPTransport):
    """Forwards to the tracker, except result uploads while ``down`` (the tracker is restarting) and
    the next upload after ``lose_answer`` is set (the tracker stored it, the answer got lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True
        self.lose_answer = False
        self.uploads: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(UPLOADS):
            self.uploads.append(request.url.path.removeprefix("/api/v1"))
            if self.down:
                raise httpx.ConnectError("tracker restarting", request=request)
            if self.lose_answer:
                self.lose_answer = False
                response = super().handle_request(request)
                response.read()
                raise httpx.ReadError("connection reset after the tracker answered", request=request)
        return super().handle_request(request)


def test_uploads_wait_in_the_spool_and_are_stored_once(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    job = live.enqueue(upstream.main[2])
    transport = FlakyTransport()
    agent = make_agent(live, tmp_path / "work", transport=transport)
    assert agent.run(once=True) == 1  # something is still spooled
    assert len(agent.spool.pending()) == 1
    assert live.runs_of(job) == []
    # The tracker is back, but the first answer gets lost after the tracker stored the run.
    transport.down = False
    transport.lose_answer = True
    agent.flush_spool()
    assert agent.spool.pending() == []
    runs = live.runs_of(job)
    assert len(runs) == 1
    assert runs[0]["status"] == "ok"
    assert live.job(job)["state"] == "done"


def test_a_spool_of_several_results_is_drained_in_one_batch(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    jobs = [live.enqueue(upstream.main[2]), live.enqueue(upstream.main[1])]
    transport = FlakyTransport()
    agent = make_agent(live, tmp_path / "work", transport=transport)
    assert agent.run(once=True) == 1  # both results wait in the spool
    assert len(agent.spool.pending()) == 2
    transport.down = False
    transport.uploads.clear()
    agent.flush_spool()
    assert transport.uploads == ["/jobs/results"]  # one request for both
    assert agent.spool.pending() == []
    for job in jobs:
        assert live.job(job)["state"] == "done"
        assert [run["status"] for run in live.runs_of(job)] == ["ok"]


class RevokedTokenTransport(httpx.HTTPTransport):
    """Answers result uploads with 401 while ``revoked`` (the token was rotated under the runner)."""

    def __init__(self) -> None:
        super().__init__()
        self.revoked = True

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.revoked and request.url.path.endswith(UPLOADS):
            return httpx.Response(401, json={"detail": "invalid or revoked token"})
        return super().handle_request(request)


def test_an_upload_refused_for_its_token_stays_in_the_spool(
    live: Tracker, upstream: Upstream, tmp_path: Path
) -> None:
    job = live.enqueue(upstream.main[2])
    transport = RevokedTokenTransport()
    agent = make_agent(live, tmp_path / "work", transport=transport)
    assert agent.run(once=True) == 1
    assert len(agent.spool.pending()) == 1
    assert not list((tmp_path / "work" / "spool" / "rejected").glob("*"))  # kept, not set aside
    assert live.runs_of(job) == []
    transport.revoked = False  # the runner came back with a valid token
    agent.flush_spool()
    assert agent.spool.pending() == []
    assert len(live.runs_of(job)) == 1


def start_runner(live: Tracker, workdir: Path, name: str, scenario: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FAKE_SGLANG_SCENARIO": scenario, "PERFTRACK_TOKEN": live.token_for(name)}
    env.pop("PERFTRACK_DATABASE_URL", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perftrack.cli",
            "runner",
            "--server",
            live.url,
            "--hardware",
            "cpu",
            "--workdir",
            str(workdir),
            "--name",
            name,
            "--poll-interval",
            "0.3",
            "--sglang",
            FAKE_SGLANG,
            "--env-allow",
            "FAKE_SGLANG_SCENARIO",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_a_runner_killed_mid_job_loses_nothing(live: Tracker, upstream: Upstream, tmp_path: Path) -> None:
    jobs = [live.enqueue(sha) for sha in upstream.main]
    doomed = start_runner(live, tmp_path / "a", "runner-a", scenario="hang")
    wait_until(lambda: live.job(jobs[0])["state"] == "leased", 60, "runner-a to lease the first job")
    pgid_file = tmp_path / "a" / "benchmark.pgid"
    wait_until(pgid_file.exists, 30, "the benchmark to start")
    orphan = int(pgid_file.read_text())
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    run_out_lease(live.settings.effective_database_url, jobs[0])  # runner-a's heartbeats are overdue
    survivor = start_runner(live, tmp_path / "b", "runner-b", scenario="ok")
    try:
        wait_until(
            lambda: all(live.job(job)["state"] == "done" for job in jobs), 90, "runner-b to finish every job"
        )
    finally:
        survivor.send_signal(signal.SIGTERM)
        survivor.wait(timeout=30)
    first = live.job(jobs[0])
    history = first["attempt_history"]
    assert isinstance(history, list)
    assert [entry["outcome"] for entry in history] == ["lease expired", "done"]
    assert [entry["runner"] for entry in history] == ["runner-a", "runner-b"]
    for job in jobs:
        runs = live.runs_of(job)
        assert [run["status"] for run in runs] == ["ok"]
    # The hanging benchmark outlived its agent; the agent's next start reaps it.
    assert group_alive(orphan)
    restarted = make_agent(live, tmp_path / "a", name="runner-a")
    assert restarted.reap_orphans() == orphan
    wait_until(lambda: not group_alive(orphan), 10, "the orphaned benchmark to die")


def test_sigterm_hands_the_running_job_back(live: Tracker, upstream: Upstream, tmp_path: Path) -> None:
    job = live.enqueue(upstream.main[0])
    runner = start_runner(live, tmp_path / "a", "runner-a", scenario="hang")
    wait_until(lambda: (tmp_path / "a" / "benchmark.pgid").exists(), 60, "the benchmark to start")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 0
    state = live.job(job)
    assert state["state"] == "queued"
    history = state["attempt_history"]
    assert isinstance(history, list)
    assert history[-1]["outcome"] == "released"
    assert live.runs_of(job) == []
