"""Benchmarks that misbehave, run by a real ``perftrack runner --once`` against a real tracker:
a log flood, binary garbage, an exit 0 without timing lines, a process killed with SIGKILL the
way the OOM killer kills. Each becomes exactly one stored run that says what happened.

A real cgroup OOM kill is out of reach here (no memory cgroup to configure); the kernel's OOM
killer ends a process with SIGKILL, which is what the ``oom`` benchmark does to itself after
allocating.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.databases import migrated_database
from tests.faults.harness import Runner, Tracker, running_tracker
from tracker import db

pytestmark = pytest.mark.slow  # real tracker and runner processes

MAX_LOG_BYTES = 256 * 1024
FLOOD_MB = 128
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def tracker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tracker]:
    root = tmp_path_factory.mktemp("benchmark-faults")
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(migrated_database(root))
        yield stack.enter_context(running_tracker(root / "tracker", url))


def run_once(tracker: Tracker, root: Path, bench: str, **bench_env: str) -> tuple[int, dict[str, Any], Any]:
    """Queue one job, run it with a fresh ``runner --once``; the job, its only run and the
    runner's resource usage."""
    job = tracker.enqueue(tracker.upstream.main[0], purpose=bench)
    runner = Runner(
        tracker,
        f"runner-{bench}",
        root / bench,
        bench=bench,
        bench_env=bench_env,
        extra_env={"PERFTRACK_MAX_LOG_BYTES": str(MAX_LOG_BYTES)},
        once=True,
    ).start()
    try:
        code, usage = runner.wait_with_usage()
    finally:
        runner.stop()
    assert code == 0, runner.log()[-3000:]
    runs = tracker.runs_of(job)
    assert len(runs) == 1, runs  # stored once, whatever the benchmark did
    assert runner.pending() == []
    assert runner.rejected() == []
    return job, tracker.run(runs[0]["id"]), usage


def stored_log(tracker: Tracker, run_id: int) -> tuple[str, bool]:
    """The log and the truncation flag as the database holds them."""
    engine = db.make_engine(tracker.database_url)
    try:
        with engine.connect() as connection:
            row = connection.execute(
                text("SELECT raw_log, log_truncated FROM run_artifacts WHERE run_id = :run"), {"run": run_id}
            ).one()
        return str(row.raw_log), bool(row.log_truncated)
    finally:
        engine.dispose()


def test_a_log_flood_is_capped_while_streaming_and_marked(tracker: Tracker, tmp_path: Path) -> None:
    job, run, usage = run_once(tracker, tmp_path, "flood", FAULT_BENCH_FLOOD_MB=str(FLOOD_MB))
    assert tracker.job(job)["state"] == "done"
    assert run["status"] == "ok"  # the timing lines at the end survive in the kept tail
    assert run["denoise_step_count"] == 50
    log, truncated = stored_log(tracker, run["id"])
    assert truncated
    assert len(log.encode()) <= MAX_LOG_BYTES + 200
    assert "bytes of log omitted]" in log
    assert log.startswith("flood ")
    # The runner never held the flood: its peak memory is that of a quiet run, give or take a
    # small part of what it streamed.
    _, quiet, quiet_usage = run_once(tracker, tmp_path, "ok")
    assert quiet["status"] == "ok"
    growth = (usage.ru_maxrss - quiet_usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)
    assert growth < FLOOD_MB * MIB // 4, f"the runner grew by {growth // MIB} MiB over a quiet run"


@pytest.mark.parametrize(
    ("bench", "status", "reason"),
    [
        ("garbage", "failed", "does not look like a text log"),
        ("garbage_then_ok", "ok", None),
        ("silent", "failed", "the benchmark printed nothing"),
        ("chatter", "failed", "no denoising stage"),
        ("no_timing", "failed", "no denoising stage"),
        ("oom", "failed", "killed by SIGKILL (out of memory?)"),
    ],
)
def test_misbehaving_benchmarks_become_one_run_that_says_why(
    tracker: Tracker, tmp_path: Path, bench: str, status: str, reason: str | None
) -> None:
    job, run, _ = run_once(tracker, tmp_path, bench)
    state = tracker.job(job)
    assert run["status"] == status
    if reason is None:
        assert state["state"] == "done"
        assert run["denoise_step_count"] == 50
        assert run["failure_reason"] is None
        return
    assert state["state"] == "failed"
    assert reason in str(run["failure_reason"])
    assert reason in str(state["failure_reason"])
    assert run["denoise_step_ms"] is None  # never a number (or a zero-step success) from a failure
    assert not run["step_times_ms"]
    log = httpx.get(f"{tracker.url}{run['log_url']}", timeout=30).text
    if bench == "oom":
        assert "allocated 64 MiB" in log
    if bench.startswith("garbage"):
        assert "\x00" not in log
        assert "\ufffd" in log  # the bytes that were no text are kept, as replacement characters
