"""Two real ``perftrack serve`` processes with the scheduler on, sharing one PostgreSQL database and one
schedule: one nightly per fire time, never two; SIGKILL the leader and the other process takes the
schedule over and fires the next one.

The schedule fires every minute. To avoid waiting for the first minute boundary, the test moves the
stored job's next fire time (APScheduler's job store) into the past, as a scheduler that was down
would find it; the second fire, after the kill, is a natural one.
"""

from __future__ import annotations

import datetime as dt
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, create_engine, func, select, text, update

from tests.conftest import ROOT, SUITES
from tests.live import free_port
from tests.tracker.scheduling.test_service import commit, git
from tests.waiting import wait_until
from tracker.enums import JobReason
from tracker.models import Job, NightlyRun, apscheduler_jobs
from tracker.settings import Settings

pytestmark = [pytest.mark.dialect, pytest.mark.slow]  # two real perftrack serve processes

ALL_SERIES = 7  # the tests' suite: four cases on H200, three on GB300


@pytest.fixture
def pg_scratch(migrated_db_url: str) -> str:
    if not migrated_db_url.startswith("postgres"):
        pytest.skip("leader election between processes is PostgreSQL's advisory lock")
    return Settings(database_url=migrated_db_url).effective_database_url


@pytest.fixture
def suite_dir(tmp_path: Path) -> tuple[Path, Path]:
    """The tests' suite, its repository a local git repository, its nightly every minute (UTC)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "--quiet", "--initial-branch=main")
    commit(upstream, "Initial commit")
    text_ = (SUITES / "sglang-diffusion.toml").read_text()
    text_ = text_.replace('url = "https://github.com/sgl-project/sglang.git"', f'url = "{upstream}"', 1)
    text_ = text_.replace(
        'cron = "0 2 * * *"\ntimezone = "Asia/Shanghai"', 'cron = "* * * * *"\ntimezone = "UTC"'
    )
    text_ = text_.replace("backfill = 10", "backfill = false")
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "sglang-diffusion.toml").write_text(text_)
    return suites, upstream


def leader_pid(engine: Engine) -> int | None:
    """The OS pid of the process holding the scheduler's advisory lock, from its connection's name."""
    with engine.connect() as connection:
        names = connection.scalars(
            text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()"
            )
        ).all()
    pids = [int(name.rsplit(":", 1)[1]) for name in names if name.startswith("perftrack-scheduler:")]
    assert len(pids) <= 1, f"two leaders: {pids}"
    return pids[0] if pids else None


def runs(engine: Engine) -> list[NightlyRun]:
    with engine.connect() as connection:
        return list(connection.execute(select(NightlyRun).order_by(NightlyRun.id)).all())  # type: ignore[arg-type]


def nightly_jobs(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(select(func.count()).select_from(Job).where(Job.reason == JobReason.NIGHTLY))
            or 0
        )


def move_next_fire_into_the_past(engine: Engine, name: str) -> None:
    """What a scheduler finds after being down across a fire time."""
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    with engine.begin() as connection:
        row = connection.execute(select(apscheduler_jobs).where(apscheduler_jobs.c.id == name)).one()
        state = pickle.loads(row.job_state)  # noqa: S301 - written by this test's own scheduler
        state["next_run_time"] = past
        connection.execute(
            update(apscheduler_jobs)
            .where(apscheduler_jobs.c.id == name)
            .values(job_state=pickle.dumps(state, pickle.HIGHEST_PROTOCOL), next_run_time=past.timestamp())
        )


def next_fire(engine: Engine, name: str) -> float:
    """The stored next fire time (POSIX seconds) of the schedule ``name``."""
    with engine.connect() as connection:
        stored = connection.scalar(
            select(apscheduler_jobs.c.next_run_time).where(apscheduler_jobs.c.id == name)
        )
    return float(stored or 0.0)  # no row: nothing stored yet


@pytest.fixture
def servers(
    pg_scratch: str, suite_dir: tuple[Path, Path], tmp_path: Path
) -> Iterator[dict[int, tuple[subprocess.Popen[bytes], str]]]:
    suites, _upstream = suite_dir
    env = {
        **os.environ,
        "PERFTRACK_DATABASE_URL": pg_scratch,
        "PERFTRACK_SUITE_DIR": str(suites),
        "PERFTRACK_DATA_DIR": str(tmp_path / "data"),
        "PERFTRACK_SCHEDULER_ENABLED": "true",
        "PERFTRACK_SWEEP_INTERVAL_S": "5",
        "PERFTRACK_LOG_LEVEL": "INFO",
    }
    started: dict[int, tuple[subprocess.Popen[bytes], str]] = {}
    logs = []
    try:
        for index in range(2):
            port = free_port()
            log = (tmp_path / f"server-{index}.log").open("wb")
            logs.append(log)
            process = subprocess.Popen(
                [sys.executable, "-m", "perftrack.cli", "serve", "--port", str(port)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            started[process.pid] = (process, f"http://127.0.0.1:{port}")
        for index, (process, url) in enumerate(started.values()):
            log_path = tmp_path / f"server-{index}.log"
            wait_until(partial(_healthy, url, process, log_path), timeout_s=60, what=f"{url} to serve")
        yield started
    finally:
        for process, _url in started.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for log in logs:
            log.close()


def _healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(
            f"the server on {url} exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
        )
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_two_servers_fire_each_nightly_once_and_the_survivor_takes_over(
    servers: dict[int, tuple[subprocess.Popen[bytes], str]],
    pg_scratch: str,
    suite_dir: tuple[Path, Path],
) -> None:
    engine = create_engine(pg_scratch)
    try:
        leader = wait_until(lambda: leader_pid(engine), timeout_s=30, what="a leader")
        assert leader in servers
        wait_until(
            lambda: runs_stored_job(engine), timeout_s=30, what="the nightly job in APScheduler's job store"
        )

        # A fire is due: exactly one process runs it.
        move_next_fire_into_the_past(engine, "sglang-nightly")
        wait_until(lambda: runs(engine), timeout_s=30, what="the first nightly")
        # The leader moves the stored fire time on after handing the fire to its executor; from
        # then on no process can run that fire again (the other one is not leading). Wait for
        # that, and for the fire's jobs, instead of sleeping a while and hoping nothing follows.
        wait_until(lambda: next_fire(engine, "sglang-nightly") > time.time(), 30, "the store to move on")
        wait_until(lambda: nightly_jobs(engine) >= ALL_SERIES, 30, "the nightly's jobs")
        first = runs(engine)
        assert len({run.scheduled_for for run in first}) == len(first)  # one record per fire time
        assert nightly_jobs(engine) == ALL_SERIES  # queued once, by one process
        assert leader_pid(engine) == leader

        # SIGKILL the leader: PostgreSQL drops its lock; the other server leads and fires the next minute.
        _upstream = suite_dir[1]
        commit(_upstream, "A new head for the next night")
        process, _url = servers[leader]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        killed_at = dt.datetime.now(dt.UTC)
        survivor = next(pid for pid in servers if pid != leader)
        wait_until(lambda: leader_pid(engine) == survivor, timeout_s=30, what="the survivor to lead")
        wait_until(
            lambda: [run for run in runs(engine) if run.fired_at >= killed_at],
            timeout_s=90,
            what="the survivor's nightly",
        )
        every = runs(engine)
        assert len({run.scheduled_for for run in every}) == len(every)
        assert nightly_jobs(engine) == 2 * ALL_SERIES  # the new head queued once, the old one not again
        answer = httpx.get(f"{servers[survivor][1]}/api/v1/nightly", params={"runs": 100}, timeout=10)
        assert answer.status_code == 200
        [summary] = answer.json()
        assert summary["schedule"] == "sglang-nightly"
        assert len(summary["runs"]) == len(every)
    finally:
        engine.dispose()


def runs_stored_job(engine: Engine) -> bool:
    with engine.connect() as connection:
        return connection.scalar(select(func.count()).select_from(apscheduler_jobs)) == 1
