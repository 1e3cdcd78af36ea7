"""PostgreSQL restarted under a running system: a tracker server process, a runner process
polling it, and the scheduler service (leader election, nightly fire, lease sweep).

While the database is down the server answers 503 with Retry-After (not 500, not a hang), the
runner backs off, the scheduler's leader loses its advisory lock. Once it is back, the leader
re-acquires the lock, the nightly fire that fell into the outage runs exactly once, the runner
takes work again, and a job whose runner vanished does not stay leased.

Runs on a private cluster (initdb into a temporary directory), whatever database the rest of the
suite uses; skipped where the PostgreSQL server binaries are missing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from tests.faults.conftest import Fleet
from tests.faults.harness import Tracker, running_tracker
from tests.faults.pgcluster import PrivateCluster, unavailable_reason
from tests.waiting import wait_until
from tracker import db
from tracker.catalog.suites import ResolvedSchedule
from tracker.models import NightlyRun, apscheduler_jobs
from tracker.scheduling.leader import PostgresLeader
from tracker.scheduling.service import SchedulerService

# Not marked `dialect`: it brings its own PostgreSQL cluster, so every pass runs it on PostgreSQL
# and the PostgreSQL pass would only run it again (tests/test_dialect_marker.py).
pytestmark = [
    pytest.mark.slow,  # a private PostgreSQL cluster, a tracker and a runner process
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
]


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    cluster = PrivateCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def database_url(cluster: PrivateCluster) -> str:
    admin = create_engine(cluster.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text('CREATE DATABASE "perftrack"'))
    admin.dispose()
    return make_url(cluster.url).set(database="perftrack").render_as_string(hide_password=False)


@pytest.fixture
def tracker(database_url: str, tmp_path: Path) -> Iterator[Tracker]:
    # The ghost's lease must run out on its own (the sweep is under test), but runner-a's must not
    # while it works: 30 s leases, heartbeats every 10 s, leave 20 s for a late one on a busy machine.
    with running_tracker(tmp_path / "tracker", database_url, lease_seconds=30) as live:
        yield live


def api(tracker: Tracker, method: str, path: str, token: str, **kwargs: object) -> httpx.Response:
    return httpx.request(
        method,
        f"{tracker.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=15,  # an answer within this, or the test fails: a hang is a failure too
        **kwargs,  # type: ignore[arg-type]
    )


def test_postgres_restart_everyone_backs_off_and_recovers(
    cluster: PrivateCluster, tracker: Tracker, database_url: str, fleet: Fleet
) -> None:
    # ``fleet`` comes last: its runners are stopped before the tracker and the cluster go.
    # A runner that works, and a "ghost" runner that leases a job and then vanishes.
    fleet.adopt(tracker)
    runner = fleet.runner("runner-a")
    warmup = tracker.enqueue(tracker.upstream.main[0])
    wait_until(lambda: tracker.job(warmup)["state"] == "done", 60, "the runner to finish a first job")
    ghost_body = {"name": "ghost", "hardware": "ghost", "gpu_count": 1}
    ghost_token = tracker.token_for("ghost")
    assert api(tracker, "POST", "/runners", ghost_token, json=ghost_body).status_code == 200
    ghost_job = tracker.enqueue(tracker.upstream.main[0], hardware="ghost")
    assert api(tracker, "POST", "/runners/ghost/claim", ghost_token).json()["job_id"] == ghost_job

    # The scheduler: a daily fire, set when the service first leads to a time a few seconds on,
    # which will fall into the outage (the same trigger every time it is asked, as a suite's is).
    fire_times: list[dt.datetime] = []

    def trigger_for(_schedule: ResolvedSchedule) -> CronTrigger:
        if not fire_times:
            fire_times.append((dt.datetime.now(dt.UTC) + dt.timedelta(seconds=4)).replace(microsecond=0))
        fire = fire_times[0]
        return CronTrigger(hour=fire.hour, minute=fire.minute, second=fire.second, timezone=dt.UTC)

    nightly = ResolvedSchedule.model_validate(
        {
            "name": "faults-nightly",
            "suite": "faults",
            "repository": "upstream",
            "cron": "0 2 * * *",
            "timezone": "UTC",
            "branch": "main",
            "hardware": ["cpu"],
            "backfill_limit": 0,
        }
    )
    engine = db.make_engine(database_url)
    service = SchedulerService(
        engine=engine,
        schedules=[nightly],
        leader=PostgresLeader(database_url),
        resolver=lambda _url, _branch: tracker.upstream.main[2],
        trigger_for=trigger_for,
        sweep_interval_s=3600,
        lease_sweep_s=1,
        retry_s=0.5,
    )
    service.start()
    try:
        wait_until(lambda: service.is_leader, 30, "the scheduler to lead")
        [fire_at] = fire_times
        assert dt.datetime.now(dt.UTC) < fire_at - dt.timedelta(seconds=1), "too slow to stage the outage"

        cluster.stop()
        # While the database is down: 503 with Retry-After, quickly, for readers and runners alike.
        for method, path in (("GET", "/jobs"), ("POST", "/runners/runner-a/claim")):
            response = api(tracker, method, path, tracker.token_for("runner-a"))
            assert response.status_code == 503, (path, response.status_code, response.text)
            assert response.headers["Retry-After"].isdigit()
        assert httpx.get(f"{tracker.url}/healthz", timeout=15).status_code == 503
        wait_until(lambda: not service.is_leader, 30, "the leader to notice it lost its lock")
        while dt.datetime.now(dt.UTC) < fire_at + dt.timedelta(seconds=1):
            time.sleep(0.1)  # the fire time passes with no database
        cluster.start()

        wait_until(lambda: service.is_leader, 60, "the scheduler to lead again")
        with engine.connect() as connection:
            locks = connection.scalar(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"))
        assert locks == 1

        def nightly_jobs() -> list[dict[str, Any]]:
            jobs = api(tracker, "GET", "/jobs", tracker.admin_token).json()
            return sorted((job for job in jobs if job["reason"] == "nightly"), key=lambda job: int(job["id"]))

        def stored_next_fire() -> float:
            with engine.connect() as connection:
                stored = connection.scalar(
                    select(apscheduler_jobs.c.next_run_time).where(apscheduler_jobs.c.id == nightly.name)
                )
            return float(stored or 0.0)  # no row: nothing stored yet

        def nightly_runs() -> list[NightlyRun]:
            with db.session_scope(db.make_session_factory(engine)) as session:
                return list(session.scalars(select(NightlyRun).order_by(NightlyRun.id)))

        wait_until(lambda: bool(nightly_runs()), 60, "the fire missed in the outage to run")
        # The missed fire's job gets run by the runner, which recovered from its backoff.
        wait_until(
            lambda: (jobs := nightly_jobs()) != [] and all(job["state"] == "done" for job in jobs),
            120,
            "the runner to finish the nightly job",
        )
        wait_until(lambda: tracker.job(ghost_job)["state"] != "leased", 120, "the ghost's lease to be swept")
        # No second run of the fire can follow once the stored fire time has moved on to the next
        # day (a run is handed to the executor before the store moves on) and stop() has waited
        # for the executor: wait for that rather than sleep and see.
        wait_until(lambda: stored_next_fire() > fire_at.timestamp(), 60, "the stored fire time to move on")
        service.stop()
        runs = nightly_runs()
    finally:
        service.stop()
        with contextlib.suppress(Exception):
            engine.dispose()

    assert len(runs) == 1
    [run] = runs
    assert run.scheduled_for == fire_at
    assert run.error is None
    assert run.jobs_queued == 1
    ghost = tracker.job(ghost_job)
    assert ghost["state"] == "queued"
    assert [entry["outcome"] for entry in ghost["attempt_history"]] == ["lease expired"]
    # One job from the fire, run once (a run flagged on a busy machine is not measured again here).
    fired = nightly_jobs()
    assert len(fired) == 1
    assert {job["state"] for job in fired} == {"done"}
    assert [run_["status"] for run_ in tracker.runs_of(fired[0]["id"])] == ["ok"]
    assert "503" in runner.log()  # it did meet the outage, and backed off instead of failing
    assert runner.process is not None
    assert runner.process.poll() is None  # it kept going
