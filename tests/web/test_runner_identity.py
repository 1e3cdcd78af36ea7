"""A runner token is one runner: on a live server, runner A's token cannot act as runner B.

Two runners hold two tokens. Every cross-runner action (claim, heartbeat, upload, release, and a
registration that would rewrite the other's hardware or take its name) is refused with 403 and
changes nothing; each runner's own actions still work; an admin token does not act as a runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import SUITES
from tests.leases import UNEXPIRING_LEASE_S
from tests.live import live_server
from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.settings import Settings

CASE = "qwen-image-t2i-1024"


@dataclass(frozen=True)
class Live:
    http: httpx.Client
    tokens: dict[str, str]  # runner-a, runner-b, admin

    def as_(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def enqueue(self, sha: str) -> int:
        body = {"case": CASE, "hardware": "H200", "commit": {"sha": sha}}
        answer = self.http.post("/api/v1/jobs", json=body, headers=self.as_("admin"))
        assert answer.status_code == 201, answer.text
        job_id: int = answer.json()["job"]["id"]
        return job_id

    def state(self) -> dict[str, Any]:
        """What a refused request must leave as it was: the runner registry, every job, the runs."""
        return {
            "runners": self.get("/api/v1/runners"),
            "jobs": self.get("/api/v1/jobs"),
            "runs": self.get(f"/api/v1/series/{CASE}/H200")["total_runs"],
        }

    def get(self, path: str) -> Any:
        answer = self.http.get(path)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def live(migrated_db_url: str, tmp_path: Path) -> Iterator[Live]:
    settings = Settings(
        database_url=migrated_db_url,
        data_dir=tmp_path,
        suite_dir=SUITES,
        environment="test",
        lease_seconds=UNEXPIRING_LEASE_S,  # no lease runs out while the test checks them
    )
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            tokens = {
                "runner-a": create_token(session=session, name="token-a", role=TokenRole.RUNNER).secret,
                "runner-b": create_token(session=session, name="token-b", role=TokenRole.RUNNER).secret,
                "admin": create_token(session=session, name="admin", role=TokenRole.ADMIN).secret,
            }
        engine.dispose()
        with httpx.Client(base_url=url, timeout=30) as http:
            yield Live(http=http, tokens=tokens)


def register(live: Live, who: str, name: str, gpus: int = 8) -> httpx.Response:
    body = {"name": name, "hardware": "H200", "gpu_count": gpus, "labels": {"owner": who}}
    return live.http.post("/api/v1/runners", json=body, headers=live.as_(who))


def test_a_runner_token_acts_only_as_its_own_runner(live: Live) -> None:
    assert register(live, "runner-a", "runner-a").status_code == 200
    assert register(live, "runner-b", "runner-b").status_code == 200
    job_b = live.enqueue("b" * 40)
    claimed = live.http.post("/api/v1/runners/runner-b/claim", headers=live.as_("runner-b"))
    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["job_id"] == job_b
    live.enqueue("a" * 40)  # waiting in the queue: a claim as B by A's token must not take it
    before = live.state()

    upload = {"attempt": 1, "status": "ok", "step_times_ms": [250.0, 251.0, 250.5]}
    refused = {
        "claim as B": live.http.post("/api/v1/runners/runner-b/claim", headers=live.as_("runner-a")),
        "heartbeat as B": live.http.post(
            f"/api/v1/jobs/{job_b}/heartbeat",
            params={"runner": "runner-b"},
            json={"attempt": 1},
            headers=live.as_("runner-a"),
        ),
        "upload as B": live.http.post(
            f"/api/v1/jobs/{job_b}/result",
            params={"runner": "runner-b"},
            json=upload,
            headers=live.as_("runner-a"),
        ),
        "release as B": live.http.post(
            f"/api/v1/jobs/{job_b}/release",
            params={"runner": "runner-b"},
            json={"attempt": 1, "reason": "x"},
            headers=live.as_("runner-a"),
        ),
        "re-register B": register(live, "runner-a", "runner-b", gpus=1),
        "admin claims as B": live.http.post("/api/v1/runners/runner-b/claim", headers=live.as_("admin")),
        "admin uploads as B": live.http.post(
            f"/api/v1/jobs/{job_b}/result",
            params={"runner": "runner-b"},
            json=upload,
            headers=live.as_("admin"),
        ),
        "admin registers": register(live, "admin", "runner-c"),
    }
    for what, answer in refused.items():
        assert answer.status_code == 403, (what, answer.status_code, answer.text)
        assert answer.json()["detail"], what
    assert "bound to another token" in refused["re-register B"].json()["detail"]
    assert "admin token" in refused["admin claims as B"].json()["detail"]
    assert live.state() == before

    # Without ?runner= the token says who it is: A's token acting on B's lease is not B's lease.
    assert (
        live.http.post(f"/api/v1/jobs/{job_b}/result", json=upload, headers=live.as_("runner-a")).status_code
        == 409
    )
    assert live.state() == before

    # A token bound to one runner cannot take another name either.
    taken = register(live, "runner-a", "runner-c")
    assert taken.status_code == 409
    assert "already acts as runner 'runner-a'" in taken.json()["detail"]

    # Each runner's own actions still work.
    beat = live.http.post(
        f"/api/v1/jobs/{job_b}/heartbeat",
        params={"runner": "runner-b"},
        json={"attempt": 1},
        headers=live.as_("runner-b"),
    )
    assert beat.status_code == 200, beat.text
    stored = live.http.post(f"/api/v1/jobs/{job_b}/result", json=upload, headers=live.as_("runner-b"))
    assert stored.status_code == 201, stored.text
    assert live.get(f"/api/v1/jobs/{job_b}")["leased_by"] is None
    assert live.get(f"/api/v1/jobs/{job_b}")["state"] == "done"
    again = register(live, "runner-b", "runner-b", gpus=4)  # the same agent restarting
    assert again.status_code == 200
    assert again.json()["gpu_count"] == 4
    mine = live.http.post("/api/v1/runners/runner-a/claim", headers=live.as_("runner-a"))
    assert mine.status_code == 200, mine.text


def test_a_runners_token_cannot_import_results_into_a_series(live: Live) -> None:
    """A token taken from a GPU host writes no result outside its own runner's jobs."""
    assert register(live, "runner-a", "runner-a").status_code == 200
    before = live.state()
    body = {
        "case": CASE,
        "hardware": "H200",
        "commit": {"sha": "c" * 40, "title": "Forged", "committed_at": "2026-03-01T10:00:00Z"},
        "status": "ok",
        "step_times_ms": [100.0, 100.0, 100.0],
    }
    refused = live.http.post("/api/v1/results", json=body, headers=live.as_("runner-a"))
    assert refused.status_code == 403, refused.text
    assert "runner 'runner-a'" in refused.json()["detail"]
    assert live.state() == before
    # A token bound to no runner (an import token) still imports.
    imported = live.http.post("/api/v1/results", json=body, headers=live.as_("runner-b"))
    assert imported.status_code == 201, imported.text
