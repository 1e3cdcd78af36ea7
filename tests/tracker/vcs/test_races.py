"""Two uploads of the same new commit (and candidate) at once: the second one uses the first's row
instead of failing with a unique violation (PostgreSQL; SQLite serialises writers)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, func, select, text

from tests.tracker.scheduling.test_service import scratch_engine
from tests.waiting import wait_until
from tracker import db
from tracker.models import Candidate, Commit, Repository
from tracker.vcs.commits import ensure_candidate, upsert_commit
from wire import CommitIn

__all__ = ["scratch_engine"]
SHA = "abcdef1234567890abcdef1234567890abcdef12"

pytestmark = pytest.mark.dialect


def lock_waits(engine: Engine) -> int:
    """How many sessions of this database wait for a lock (PostgreSQL)."""
    with engine.connect() as connection:
        waiting = connection.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
    return int(waiting or 0)


def test_a_commit_and_candidate_inserted_concurrently_are_shared(scratch_engine: Engine) -> None:
    if scratch_engine.dialect.name != "postgresql":
        pytest.skip("SQLite takes one writer at a time: the two inserts cannot interleave")
    sessions = db.make_session_factory(scratch_engine)
    first = sessions()
    repository = first.scalar(select(Repository).where(Repository.name == "sglang"))
    assert repository is not None
    mine = upsert_commit(session=first, repository=repository, commit=CommitIn(sha=SHA, title="Fuse norm"))
    ensure_candidate(session=first, base=mine, patches=["#43601"])  # inserted, not committed yet
    outcome: dict[str, object] = {}

    def second_upload() -> None:
        with db.session_scope(sessions) as session:
            stored = session.scalar(select(Repository).where(Repository.name == "sglang"))
            assert stored is not None
            # Both look-ups find nothing; both inserts wait on the first transaction's unique keys.
            theirs = upsert_commit(
                session=session, repository=stored, commit=CommitIn(sha=SHA, author_name="A. Dev")
            )
            candidate = ensure_candidate(session=session, base=theirs, patches=["#43601"])
            outcome["commit"] = theirs.id
            outcome["candidate"] = candidate.id

    thread = threading.Thread(target=second_upload)
    thread.start()
    # Commit only once the second upload is really blocked on the first one's uncommitted rows.
    wait_until(lambda: lock_waits(scratch_engine), 30, "the second upload to wait on the first one's rows")
    assert thread.is_alive()
    first.commit()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert outcome["commit"] == mine.id
    with db.session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Commit).where(Commit.sha == SHA)) == 1
        assert session.scalar(select(func.count()).select_from(Candidate)) == 1
        assert session.scalar(select(Candidate.id)) == outcome["candidate"]
        merged = session.scalar(select(Commit).where(Commit.sha == SHA))
        assert merged is not None
        assert (merged.title, merged.author_name) == ("Fuse norm", "A. Dev")  # both uploads' facts kept
    first.close()
