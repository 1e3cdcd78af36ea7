"""The spool drain against a fake tracker (httpx.MockTransport): batches, per-upload outcomes, what is
kept, and the fallback to single uploads for a tracker without the batch route."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from runners.client import TrackerClient
from runners.drain import drain_spool
from runners.spool import Spool

Handler = Callable[[httpx.Request], httpx.Response]


class FakeTracker:
    """Answers the batch route with ``outcomes`` (one per upload, in order) and single uploads with 201,
    unless ``batch_status``/``single_status`` say otherwise; records every request."""

    def __init__(self, outcomes: dict[int, tuple[str, int | None]] | None = None) -> None:
        self.outcomes = outcomes or {}
        self.batch_status = 200
        self.single_status = 201
        self.unreachable = False
        self.requests: list[tuple[str, Any]] = []
        self.runners: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append((request.url.path, body))
        self.runners.append(request.url.params.get("runner"))
        if self.unreachable:
            raise httpx.ConnectError("tracker restarting", request=request)
        if request.url.path.endswith("/jobs/results"):
            if self.batch_status != 200:
                return httpx.Response(self.batch_status, json={"detail": "Method Not Allowed"})
            return httpx.Response(200, json=self._answer(body["results"]))
        if self.single_status >= 400:
            return httpx.Response(self.single_status, json={"detail": "attempt 1 is no longer leased"})
        return httpx.Response(self.single_status, json={"run_id": 1, "created": True})

    def _answer(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        items = []
        for index, item in enumerate(results):
            outcome, status = self.outcomes.get(item["job_id"], ("stored", None))
            reason = f"job {item['job_id']}: no" if outcome == "refused" else None
            items.append(
                {"index": index, "outcome": outcome, "job_id": item["job_id"], "run_id": index + 1}
                | ({"reason": reason, "error_status": status} if reason else {})
            )
        counts = {
            name: sum(item["outcome"] == name for item in items)
            for name in ("stored", "duplicate", "refused")
        }
        return {"items": items, **counts}

    @property
    def paths(self) -> list[str]:
        return [path.removeprefix("/api/v1") for path, _ in self.requests]


def spooled(tmp_path: Path, jobs: list[int], runner: str = "cpu-1", log: str = "") -> Spool:
    spool = Spool(tmp_path / "spool")
    for job_id in jobs:
        put(spool, job_id, runner, {"attempt": 1, "status": "ok", "raw_log": log})
    return spool


def put(spool: Spool, job_id: int, runner: str, payload: dict[str, Any]) -> None:
    """Spool an upload, dated ``job_id`` seconds after the epoch (the spool drains oldest first)."""
    path = spool.put(job_id=job_id, runner=runner, payload=payload)
    os.utime(path, (job_id, job_id))


def client(fake: FakeTracker, retries: int = 0) -> TrackerClient:
    return TrackerClient(
        "http://tracker",
        "pt_token",
        transport=httpx.MockTransport(fake),
        retries=retries,
        sleep=lambda _: None,
    )


def reasons(spool: Spool) -> dict[str, str]:
    return {path.name: path.read_text().strip() for path in sorted(spool.rejected.glob("*.reason.txt"))}


def test_the_spool_goes_in_one_batch_and_each_upload_gets_its_own_outcome(tmp_path: Path) -> None:
    spool = spooled(tmp_path, [1, 2, 3, 4])
    fake = FakeTracker({2: ("duplicate", None), 3: ("refused", 409), 4: ("refused", 422)})
    drain_spool(spool, client(fake))
    assert fake.paths == ["/jobs/results"]
    [(_, body)] = fake.requests
    assert [item["job_id"] for item in body["results"]] == [1, 2, 3, 4]
    assert body["results"][0]["result"] == {"attempt": 1, "status": "ok", "raw_log": ""}
    assert spool.pending() == []
    assert reasons(spool) == {
        "job-3-attempt-1.reason.txt": "tracker refused the attempt: job 3: no",
        "job-4-attempt-1.reason.txt": "tracker refused the upload: 422: job 4: no",
    }


@pytest.mark.parametrize("status", [404, 405, 413])
def test_a_tracker_without_the_batch_route_gets_each_upload_alone(tmp_path: Path, status: int) -> None:
    spool = spooled(tmp_path, [1, 2])
    fake = FakeTracker()
    fake.batch_status = status
    drain_spool(spool, client(fake))
    assert fake.paths == ["/jobs/results", "/jobs/1/result", "/jobs/2/result"]
    assert spool.pending() == []
    assert reasons(spool) == {}


def test_the_fallback_treats_a_lost_lease_as_before(tmp_path: Path) -> None:
    spool = spooled(tmp_path, [1])
    fake = FakeTracker()
    fake.batch_status, fake.single_status = 405, 409
    drain_spool(spool, client(fake))
    assert reasons(spool) == {
        "job-1-attempt-1.reason.txt": "tracker refused the attempt: attempt 1 is no longer leased"
    }


@pytest.mark.parametrize("status", [401, 403, 503])
def test_a_refused_token_or_a_failing_tracker_keeps_everything(tmp_path: Path, status: int) -> None:
    spool = spooled(tmp_path, [1, 2, 3])
    fake = FakeTracker()
    fake.batch_status = status
    drain_spool(spool, client(fake, retries=1), batch_items=2)
    # One batch (tried twice when the tracker fails), then the drain stops: no single uploads.
    assert set(fake.paths) == {"/jobs/results"}
    assert len(fake.paths) == (2 if status == 503 else 1)
    assert len(spool.pending()) == 3
    assert reasons(spool) == {}


def test_an_unreachable_tracker_keeps_everything(tmp_path: Path) -> None:
    spool = spooled(tmp_path, [1, 2])
    fake = FakeTracker()
    fake.unreachable = True
    drain_spool(spool, client(fake))
    assert len(spool.pending()) == 2
    fake.unreachable = False  # back: the next drain delivers them
    drain_spool(spool, client(fake))
    assert spool.pending() == []


def test_batches_are_bounded_by_count_size_and_runner(tmp_path: Path) -> None:
    spool = spooled(tmp_path, [1, 2, 3], log="x" * 3000)
    for job_id in (4, 5):
        put(spool, job_id, "cpu-2", {"attempt": 1, "status": "ok"})
    fake = FakeTracker()
    drain_spool(spool, client(fake), batch_items=3, batch_bytes=7000)
    sent = [[item["job_id"] for item in body["results"]] for _, body in fake.requests]
    assert sent == [[1, 2], [3], [4, 5]]
    assert fake.runners == ["cpu-1", "cpu-1", "cpu-2"]
    assert spool.pending() == []


def test_an_answer_that_is_no_batch_outcome_falls_back_to_single_uploads(tmp_path: Path) -> None:
    spool = spooled(tmp_path, [1, 2])
    fake = FakeTracker()
    fake._answer = lambda results: {"items": [], "stored": 0, "duplicate": 0, "refused": 0}  # type: ignore[method-assign]
    drain_spool(spool, client(fake))
    assert fake.paths == ["/jobs/results", "/jobs/1/result", "/jobs/2/result"]
    assert spool.pending() == []
