"""Requests never wait on git: a tracker whose git history takes 5 s still answers every upload
at once, and the bisection the uploads called for starts after the answers.

A live server (uvicorn) on a file database, as in production: the history reader is a fake that
sleeps 5 s per range, as a clone of a large repository does. The uploads are imports of a
nightly series with a step change; the one that makes the change hold over several runs starts
its bisection, whose range is not stored (each commit's first parent is unknown to the tracker),
so it must come from git.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.conftest import SUITES
from tests.factories import result_body
from tests.live import serve_asgi
from tests.waiting import wait_until
from tracker import db
from tracker.access.tokens import create_token
from tracker.bootstrap import prepare_database
from tracker.enums import TokenRole
from tracker.models import Alert, Repository
from tracker.settings import Settings
from tracker.vcs.history import GitHistory
from web.app import create_app
from web.deps import get_history
from wire import CommitIn

pytestmark = pytest.mark.slow

GIT_SECONDS = 5.0
START = dt.datetime(2026, 5, 1, 9, tzinfo=dt.UTC)


def _sha(index: int, kind: str = "a") -> str:
    return f"{kind}{index:039x}"


class SlowHistory(GitHistory):
    """Lists a range after sleeping as a slow clone does; remembers when each listing ran."""

    def __init__(self, cache_dir: Path) -> None:
        super().__init__(cache_dir)
        object.__setattr__(self, "listings", [])

    def first_parent_range(self, repository: Repository, good_sha: str, bad_sha: str) -> list[CommitIn]:
        started = time.monotonic()
        time.sleep(GIT_SECONDS)
        listings: list[tuple[float, float]] = self.listings  # type: ignore[attr-defined]
        listings.append((started, time.monotonic()))
        between = CommitIn(sha=_sha(1, "b"), parents=[good_sha], title="between", committed_at=START)
        bad = CommitIn(sha=bad_sha, parents=[between.sha], title="the change", committed_at=START)
        return [between, bad]


def _night(index: int, value_ms: float) -> dict[str, Any]:
    """An imported nightly result whose first parent the tracker never stores."""
    steps = [value_ms * (1 + 0.001 * ((index + step) % 3 - 1)) for step in range(6)]
    return result_body(
        commit={
            "sha": _sha(index),
            "parents": [_sha(index, "c")],  # not stored: the range must be listed from git
            "title": f"night {index}",
            "committed_at": (START + dt.timedelta(days=index)).isoformat(),
        },
        step_times_ms=steps,
        denoise_step_mean_ms=sum(steps) / len(steps),
        idempotency_key=f"slow-git-night-{index:03d}",
    )


def test_uploads_answer_at_once_while_the_bisection_waits_for_a_slow_git(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'perftrack.db'}",
        data_dir=tmp_path,
        suite_dir=SUITES,
        environment="test",
    )
    engine = db.make_engine(settings.effective_database_url)
    prepare_database(settings, engine)
    with db.session_scope(db.make_session_factory(engine)) as session:
        token = create_token(session=session, name="importer", role=TokenRole.RUNNER).secret
    history = SlowHistory(tmp_path / "git")
    app = create_app(settings, engine, prepare=False)
    app.dependency_overrides[get_history] = lambda: history
    answers: list[tuple[float, float]] = []
    with serve_asgi(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        for index in range(14):
            body = _night(index, 100.0 if index < 8 else 110.0)
            started = time.monotonic()
            response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
            answers.append((started, time.monotonic()))
            assert response.status_code == 201, response.text

        def bisection_started() -> str | None:
            with db.make_session_factory(engine, write=False)() as session:
                state = session.scalar(
                    select(Alert.bisection_state).where(Alert.bisection_state.is_not(None))
                )
            return None if state is None or state.value == "queued" else state.value

        state = wait_until(bisection_started, timeout_s=60, what="the bisection to start")
    engine.dispose()
    slowest = max(end - start for start, end in answers)
    listings: list[tuple[float, float]] = history.listings  # type: ignore[attr-defined]
    assert len(listings) == 1, listings
    assert slowest < 1.0, f"an upload took {slowest:.2f} s while git took {GIT_SECONDS:g} s"
    listed_from, listed_to = listings[0]
    overlapping = [(start, end) for start, end in answers if start < listed_to and end > listed_from]
    assert all(end - start < 1.0 for start, end in overlapping), overlapping
    assert state == "running"  # the range listed: one commit between, measured by a bisect job
