"""Claims that wait (long-poll), on a live server: answered when a job is queued, never twice.

A claim with ``?wait=N`` that finds nothing holds its request until a job of the runner's kind is
queued (a commit in the server's process wakes it; on PostgreSQL a ``NOTIFY`` from any process
does), or answers 204 after N seconds. Every test checks what the runners got, not how fast.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.leases import UNEXPIRING_LEASE_S
from tests.live import live_server
from tracker import db
from tracker.access.tokens import create_token
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason, TokenRole
from tracker.queue.jobs import enqueue_job
from tracker.queue.wakeups import NotifyListener, job_queued, on_job_queued
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate, upsert_commit
from web.waiters import JobWaiters
from wire import CommitIn

pytestmark = [pytest.mark.dialect, pytest.mark.slow]  # live servers

CASE = "qwen-image-t2i-1024"


class Fleet:
    """A live server, an admin token, and runner tokens registered as runners on demand."""

    def __init__(self, http: httpx.Client, url: str, database_url: str, admin: str) -> None:
        self.http = http
        self.url = url
        self.database_url = database_url
        self.admin = {"Authorization": f"Bearer {admin}"}
        self.tokens: dict[str, str] = {}

    def runner(self, name: str, hardware: str = "H200") -> dict[str, str]:
        engine = db.make_engine(self.database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            secret = create_token(session=session, name=f"token-{name}", role=TokenRole.RUNNER).secret
        engine.dispose()
        headers = {"Authorization": f"Bearer {secret}"}
        body = {"name": name, "hardware": hardware, "gpu_count": 8}
        answer = self.http.post("/api/v1/runners", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        return headers

    def enqueue(self, sha: str, hardware: str = "H200") -> int:
        body = {"case": CASE, "hardware": hardware, "commit": {"sha": sha}}
        answer = self.http.post("/api/v1/jobs", json=body, headers=self.admin)
        assert answer.status_code == 201, answer.text
        job_id: int = answer.json()["job"]["id"]
        return job_id

    def claim(self, name: str, headers: dict[str, str], wait: float) -> httpx.Response:
        with httpx.Client(base_url=self.url, timeout=wait + 30) as client:
            return client.post(f"/api/v1/runners/{name}/claim", params={"wait": wait}, headers=headers)


@pytest.fixture
def fleet(migrated_db_url: str, tmp_path: Path) -> Iterator[Fleet]:
    settings = Settings(
        database_url=migrated_db_url,
        data_dir=tmp_path,
        suite_dir=SUITES,
        environment="test",
        lease_seconds=UNEXPIRING_LEASE_S,
    )
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            admin = create_token(session=session, name="admin", role=TokenRole.ADMIN).secret
        engine.dispose()
        with httpx.Client(base_url=url, timeout=60) as http:
            yield Fleet(http, url, settings.effective_database_url, admin)


def test_a_waiting_claim_gets_the_job_queued_while_it_waits(fleet: Fleet) -> None:
    headers = fleet.runner("waiter")
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(fleet.claim, "waiter", headers, 25.0)
        time.sleep(0.5)
        assert not pending.done(), "the claim answered before any job was queued"
        job_id = fleet.enqueue("a" * 40)
        answer = pending.result(timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["job_id"] == job_id


def test_a_waiting_claim_with_nothing_queued_answers_no_content_when_its_time_is_up(fleet: Fleet) -> None:
    headers = fleet.runner("idle")
    started = time.monotonic()
    answer = fleet.claim("idle", headers, 1.5)
    assert answer.status_code == 204
    assert time.monotonic() - started >= 1.5  # it did wait, rather than answer at once


def test_a_job_of_another_kind_does_not_answer_a_waiting_claim(fleet: Fleet) -> None:
    headers = fleet.runner("h200-runner")
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(fleet.claim, "h200-runner", headers, 2.0)
        time.sleep(0.3)
        fleet.enqueue("b" * 40, hardware="GB300")
        answer = pending.result(timeout=60)
    assert answer.status_code == 204


def test_waiting_claims_share_new_jobs_never_one_job_twice(fleet: Fleet) -> None:
    runners = {f"racer-{index}": fleet.runner(f"racer-{index}") for index in range(8)}
    with ThreadPoolExecutor(len(runners)) as pool:
        pending = [pool.submit(fleet.claim, name, headers, 4.0) for name, headers in runners.items()]
        time.sleep(0.5)
        queued = {fleet.enqueue(f"{index:040x}") for index in range(3)}
        answers = [future.result(timeout=60) for future in pending]
    claimed = [answer.json()["job_id"] for answer in answers if answer.status_code == 200]
    assert sorted(claimed) == sorted(queued)
    assert sum(answer.status_code == 204 for answer in answers) == len(runners) - 3


def test_a_claim_for_another_runner_is_refused_at_once_even_when_waiting(fleet: Fleet) -> None:
    fleet.runner("owner")
    other = fleet.runner("other")
    answer = fleet.claim("owner", other, 20.0)
    assert answer.status_code == 403, answer.text


def test_the_wait_is_bounded(fleet: Fleet) -> None:
    headers = fleet.runner("greedy")
    answer = fleet.http.post("/api/v1/runners/greedy/claim", params={"wait": 3600}, headers=headers)
    assert answer.status_code == 422
    assert "wait" in answer.text


def test_a_job_queued_in_another_process_wakes_this_ones_listener(migrated_db_url: str) -> None:
    """PostgreSQL: the commit's NOTIFY reaches a LISTENing connection (another process in production)."""
    if migrated_db_url.startswith("sqlite"):
        pytest.skip("SQLite has no cross-process notification; waiters re-check the queue instead")
    engine = db.make_engine(migrated_db_url)
    heard: list[int] = []
    got = threading.Event()
    listener = NotifyListener(make_url(migrated_db_url))
    listener.start()

    def hear(kind: int) -> None:
        heard.append(kind)
        got.set()

    undo = on_job_queued(hear)
    try:
        assert listener.connected.wait(30)
        with db.session_scope(db.make_session_factory(engine)) as session:
            job_queued(session=session, hardware_kind_id=4242)
            session.info.clear()  # no local callback: only the NOTIFY may tell the listener
        assert got.wait(30)
        assert heard == [4242]
    finally:
        undo()
        listener.stop()
        engine.dispose()


def test_only_a_committed_enqueue_wakes_waiters(session: Session) -> None:
    """An enqueue rolled back tells no waiter; the same enqueue committed tells them its kind."""
    case = get_current_case(session=session, slug=CASE)
    kind = get_hardware_kind(session=session, name="H200")
    assert case.repository is not None
    heard: list[int] = []
    undo = on_job_queued(heard.append)
    try:
        for outcome in ("rolled back", "committed"):
            commit = upsert_commit(session=session, repository=case.repository, commit=CommitIn(sha="d" * 40))
            candidate = ensure_candidate(session=session, base=commit, patches=[])
            enqueue_job(
                session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.NIGHTLY
            )
            if outcome == "rolled back":
                session.rollback()
                assert heard == []
            else:
                session.commit()
    finally:
        undo()
    assert heard == [kind.id]


def test_waiters_wake_only_their_kind_and_all_at_shutdown() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        waiters = JobWaiters()
        waiters.start()
        h200 = waiters.register(1)
        gb300 = waiters.register(2)
        threading.Thread(target=waiters._job_queued, args=(1,)).start()  # from another thread, as a commit
        woke_h200 = await waiters.wait(h200, 5)
        woke_gb300 = await waiters.wait(gb300, 0.2)
        waiters.close()
        woke_at_close = await waiters.wait(gb300, 5)
        return woke_h200, woke_gb300, woke_at_close

    # On a thread of its own: an earlier test (the browser's) may leave this thread's loop running.
    outcome: list[tuple[bool, bool, bool]] = []
    runner = threading.Thread(target=lambda: outcome.append(asyncio.run(scenario())))
    runner.start()
    runner.join(timeout=60)
    assert outcome == [(True, False, True)]
