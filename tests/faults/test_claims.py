"""Claim races: runners hammering the claim endpoint for the last job, and many claimers (50 on
PostgreSQL, 8 on SQLite), each on its own connection, over hundreds of jobs, some of them
crashing mid-job. Every job is claimed exactly once per attempt, none is lost, none stays leased."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from tests.databases import migrated_database
from tests.faults.conftest import Fleet
from tests.faults.harness import SUITE
from tests.leases import UNEXPIRING_LEASE_S
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind, sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import JobReason, JobState
from tracker.models import Job, Repository, Runner, utcnow
from tracker.queue.jobs import DEFAULT_LEASE, enqueue_job, finish_job
from tracker.queue.runners import register_runner
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows import jobs as workflow_jobs
from wire import CommitIn

pytestmark = [
    pytest.mark.dialect,
    pytest.mark.slow,
]  # a real tracker process; 50 (PostgreSQL) or 8 claimer threads over 300 jobs

RUNNERS = 8
ROUNDS = 12
JOBS = 300


def test_racing_runners_get_the_last_job_exactly_once(fleet: Fleet) -> None:
    # Leases that cannot run out during the test, however busy the machine: a job won in an early
    # round whose lease ran out would be handed out again in a later one (two 200s in one round),
    # which is lease expiry, not a race. Lease expiry under claims is the next test's.
    tracker = fleet.tracker(lease_seconds=UNEXPIRING_LEASE_S)
    names = [f"racer-{index}" for index in range(RUNNERS)]
    auth = {name: {"Authorization": f"Bearer {tracker.token_for(name)}"} for name in names}
    for name in names:
        with httpx.Client(base_url=f"{tracker.url}/api/v1", headers=auth[name], timeout=60) as http:
            body = {"name": name, "hardware": "cpu", "gpu_count": 1}
            assert http.post("/runners", json=body).status_code == 200
    winners: dict[int, list[str]] = {}
    with ThreadPoolExecutor(RUNNERS) as pool:
        for round_ in range(ROUNDS):
            job = tracker.enqueue(tracker.upstream.main[round_ % 3], purpose=f"race-{round_}")
            start = threading.Barrier(RUNNERS)

            def claim(name: str, start: threading.Barrier = start) -> tuple[str, int, int | None]:
                with httpx.Client(base_url=f"{tracker.url}/api/v1", headers=auth[name], timeout=60) as http:
                    start.wait()
                    response = http.post(f"/runners/{name}/claim")
                job_id = response.json()["job_id"] if response.status_code == 200 else None
                return name, response.status_code, job_id

            answers = list(pool.map(claim, names))
            assert sorted(status for _, status, _ in answers) == [200] + [204] * (RUNNERS - 1), answers
            winners[job] = [name for name, status, job_id in answers if status == 200 and job_id == job]
    assert all(len(names_) == 1 for names_ in winners.values()), winners
    for job, [winner] in winners.items():
        state = tracker.job(job)
        assert (state["state"], state["attempts"], state["leased_by"]) == ("leased", 1, winner)


def test_runners_waiting_on_an_empty_queue_share_each_new_job_exactly_once(fleet: Fleet) -> None:
    """Long-polling claims on a real server: a job queued by another process (the admin's request
    may reach either server process; PostgreSQL's NOTIFY or SQLite's re-check brings it to the
    waiters) goes to exactly one waiting runner; the others are answered 204 when their wait ends."""
    tracker = fleet.tracker(lease_seconds=UNEXPIRING_LEASE_S)
    names = [f"waiter-{index}" for index in range(RUNNERS)]
    auth = {name: {"Authorization": f"Bearer {tracker.token_for(name)}"} for name in names}
    for name in names:
        with httpx.Client(base_url=f"{tracker.url}/api/v1", headers=auth[name], timeout=60) as http:
            assert (
                http.post("/runners", json={"name": name, "hardware": "cpu", "gpu_count": 1}).status_code
                == 200
            )

    def claim(name: str) -> tuple[int, int | None]:
        with httpx.Client(base_url=f"{tracker.url}/api/v1", headers=auth[name], timeout=60) as http:
            response = http.post(f"/runners/{name}/claim", params={"wait": 6})
        return response.status_code, response.json()["job_id"] if response.status_code == 200 else None

    for round_ in range(3):
        with ThreadPoolExecutor(RUNNERS) as pool:
            waiting = [pool.submit(claim, name) for name in names]
            time.sleep(1.0)  # every claim is waiting on an empty queue now
            job = tracker.enqueue(tracker.upstream.main[round_], purpose=f"wait-{round_}")
            answers = [future.result(timeout=60) for future in waiting]
        assert sorted(status for status, _ in answers) == [200] + [204] * (RUNNERS - 1), answers
        assert [job_id for status, job_id in answers if status == 200] == [job]


@pytest.fixture
def claim_engine(tmp_path: Path) -> Iterator[Engine]:
    """A fresh database with the fault suite and ``JOBS`` queued jobs."""
    with migrated_database(tmp_path) as url:
        db.upgrade(url)
        suites = tmp_path / "suites"
        suites.mkdir()
        (suites / "faults.toml").write_text(SUITE.format(url=tmp_path / "upstream"))
        engine = db.make_engine(url, pool_size=60, max_overflow=0)
        try:
            with db.session_scope(db.make_session_factory(engine)) as session:
                sync_suites(session=session, suites=load_suites(suites))
                repository = session.scalars(select(Repository)).one()
                commit = upsert_commit(session=session, repository=repository, commit=CommitIn(sha="c" * 40))
                candidate = ensure_candidate(session=session, base=commit, patches=[])
                case = get_current_case(session=session, slug="fake-t2i")
                kind = get_hardware_kind(session=session, name="cpu")
                for index in range(JOBS):
                    enqueue_job(
                        session=session,
                        candidate=candidate,
                        case=case,
                        hardware=kind,
                        reason=JobReason.MANUAL,
                        purpose=f"load-{index}",
                    )
            yield engine
        finally:
            engine.dispose()


def crashes(job: Job) -> bool:
    """Whether the claimer of this attempt dies before finishing it (every 7th job, first attempt)."""
    return job.id % 7 == 0 and job.attempts == 1


def claim_until_empty(engine: Engine, runner_id: int, start: threading.Barrier) -> list[tuple[int, int]]:
    """One claimer on its own connection: claim, finish (or crash), repeat; the (job, attempt) pairs."""
    sessions = db.make_session_factory(engine)
    claimed: list[tuple[int, int]] = []
    start.wait()
    with sessions() as session:
        while True:
            runner = session.get(Runner, runner_id)
            assert runner is not None
            job = workflow_jobs.claim(session=session, runner=runner)
            session.commit()
            if job is None:
                return claimed
            claimed.append((job.id, job.attempts))
            if crashes(job):
                continue  # the lease is left to run out
            finish_job(job=job, runner=runner, failure_reason=None)
            session.commit()


def test_many_claimers_claim_every_job_exactly_once(claim_engine: Engine) -> None:
    claimers = 50 if claim_engine.dialect.name == "postgresql" else 8
    with db.session_scope(db.make_session_factory(claim_engine)) as session:
        kind = get_hardware_kind(session=session, name="cpu")
        runner_ids = [
            register_runner(
                session=session,
                name=f"claimer-{index}",
                hardware=kind,
                gpu_count=1,
                labels={},
                version="",
                host="",
                token=None,
            ).id
            for index in range(claimers)
        ]

    def wave() -> list[tuple[int, int]]:
        start = threading.Barrier(claimers)
        with ThreadPoolExecutor(claimers) as pool:
            results = list(
                pool.map(lambda runner_id: claim_until_empty(claim_engine, runner_id, start), runner_ids)
            )
        return [pair for result in results for pair in result]

    first = wave()
    # The crashed claimers' leases run out; the sweep puts their jobs back, a second wave runs them.
    with db.session_scope(db.make_session_factory(claim_engine)) as session:
        expired = workflow_jobs.expire(
            session=session, now=utcnow() + DEFAULT_LEASE + dt.timedelta(seconds=1)
        )
        expired_ids = sorted(job.id for job in expired)
    second = wave()

    claims = first + second
    assert len(claims) == len(set(claims))  # no attempt of any job went to two claimers
    with Session(claim_engine) as session:
        jobs = session.scalars(select(Job).order_by(Job.id)).all()
        assert len(jobs) == JOBS
        crashed = sorted(job.id for job in jobs if job.id % 7 == 0)
        assert expired_ids == crashed
        assert sorted(job_id for job_id, attempt in second) == crashed
        assert {job.id for job in jobs} == {job_id for job_id, _ in first}  # every job claimed
        for job in jobs:
            expected_attempts = 2 if job.id % 7 == 0 else 1
            assert (job.state, job.attempts) == (JobState.DONE, expected_attempts), job.id
            assert sorted(attempt for job_id, attempt in claims if job_id == job.id) == list(
                range(1, expected_attempts + 1)
            )
        leased = session.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.LEASED))
        assert leased == 0
