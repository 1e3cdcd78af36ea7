"""The outbox against GitHub's rate limits, on a database of its own shared by two connections: no
database lock is held while GitHub is called, and a rate-limited row waits for GitHub's reset."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from tests.fakes.fake_github import FakeGithub
from tracker import db
from tracker.enums import OutboxKind
from tracker.github import outbox
from tracker.github.client import GithubClient
from tracker.github.outbox import FlushReport, flush_outbox
from tracker.models import GithubOutbox, utcnow
from tracker.settings import Settings

REPO = "sgl-project/sglang"
PR = 43650


@pytest.fixture
def sessions(migrated_db_url: str) -> Iterator[sessionmaker[Session]]:
    """Write sessions as the server makes them (on SQLite: ``BEGIN IMMEDIATE``, the write lock)."""
    engine = db.make_engine(migrated_db_url)
    yield db.make_session_factory(engine)
    engine.dispose()


def reply_rows(sessions: sessionmaker[Session], count: int) -> list[int]:
    with sessions() as session:
        rows = [
            outbox.queue(
                session=session,
                kind=OutboxKind.REPLY,
                repository=REPO,
                target=PR,
                payload={"body": f"reply {index}"},
            )
            for index in range(count)
        ]
        session.commit()
        return [row.id for row in rows]


def test_a_rate_limited_write_holds_no_lock_and_waits_for_the_reset(
    sessions: sessionmaker[Session], migrated_db_url: str, settings: Settings
) -> None:
    first, second = reply_rows(sessions, 2)
    fake = FakeGithub()
    reset = utcnow().replace(microsecond=0) + dt.timedelta(hours=1)
    fake.rate_limit_next(100, reset_at=reset, methods=("POST",))
    inner = fake.transport()
    other = db.make_engine(migrated_db_url)
    meanwhile: list[str] = []

    def while_github_answers(request: httpx.Request) -> httpx.Response:
        # Another request of the server (a webhook delivery, a result upload) writes meanwhile.
        try:
            with db.make_session_factory(other)() as session:
                outbox.queue(session=session, kind=OutboxKind.REACTION, repository=REPO, target=1)
                session.commit()
            meanwhile.append("written")
        except OperationalError as error:
            meanwhile.append(str(error.orig))
        return inner.handle_request(request)

    waits: list[float] = []
    client = GithubClient(
        token="ghp_x", transport=httpx.MockTransport(while_github_answers), sleep=waits.append
    )
    with sessions() as session:
        report = flush_outbox(session=session, settings=settings, client=client)
    other.dispose()

    assert meanwhile == ["written"]
    assert waits == []
    assert report == FlushReport(failed=1)  # the rate limit ends the flush: the other row waits
    with sessions() as session:
        limited, untouched = session.get(GithubOutbox, first), session.get(GithubOutbox, second)
        assert limited is not None
        assert untouched is not None
        assert limited.next_attempt_at is not None
        assert reset <= limited.next_attempt_at <= reset + dt.timedelta(seconds=2)
        assert (limited.refusals, limited.dead_at, limited.done_at) == (0, None, None)
        assert "rate limit" in (limited.last_error or "")
        assert untouched.attempts == 0
    assert len(fake.calls_to("POST", "/comments")) == 1
