"""The runner's HTTP client: what it retries, how long it waits, what it raises when it gives up."""

from __future__ import annotations

import httpx
import pytest

from runners.client import LeaseLost, TrackerClient, TrackerError, TrackerUnavailable


def _client(
    answers: list[httpx.Response | Exception], waits: list[float], *, retries: int = 5
) -> TrackerClient:
    def handle(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return TrackerClient(
        "http://tracker",
        "pt_token",
        transport=httpx.MockTransport(handle),
        sleep=waits.append,
        backoff_s=1.0,
        max_backoff_s=3.0,
        retries=retries,
    )


def test_5xx_429_and_unreachable_are_retried_with_capped_exponential_backoff() -> None:
    refused = httpx.ConnectError("connection refused")
    answers: list[httpx.Response | Exception] = [
        httpx.Response(503, json={"detail": "restarting"}),
        refused,
        httpx.Response(429),
        httpx.Response(502),
        httpx.Response(200, json={"id": 1}),
    ]
    waits: list[float] = []
    client = _client(answers, waits, retries=5)
    assert client.register(name="cpu-1", hardware="cpu", gpu_count=1, labels={}, version="", host="") == {
        "id": 1
    }
    assert waits == [1.0, 2.0, 3.0, 3.0]
    assert answers == []


def test_it_gives_up_after_its_retries_and_says_what_went_wrong_last() -> None:
    waits: list[float] = []
    client = _client([httpx.Response(503, json={"detail": "restarting"})] * 3, waits, retries=2)
    with pytest.raises(TrackerUnavailable, match=r"tracker answered 503: restarting \(after 3 tries\)"):
        client.release(runner="cpu-1", job_id=7, attempt=1, reason="stopping")
    assert waits == [1.0, 2.0]

    unreachable: list[httpx.Response | Exception] = [httpx.ConnectError("connection refused")]
    with pytest.raises(
        TrackerUnavailable, match=r"cannot reach the tracker: ConnectError.*\(after 1 tries\)"
    ):
        _client(unreachable, [], retries=0).release(runner="cpu-1", job_id=7, attempt=1, reason="x")


def test_a_heartbeat_is_tried_once_and_4xx_answers_are_never_retried() -> None:
    waits: list[float] = []
    with pytest.raises(TrackerUnavailable):
        _client([httpx.Response(503)], waits, retries=5).heartbeat(runner="cpu-1", job_id=7, attempt=1)
    with pytest.raises(LeaseLost):
        _client([httpx.Response(409, json={"detail": "lease lost"})], waits).heartbeat(
            runner="cpu-1", job_id=7, attempt=1
        )
    with pytest.raises(TrackerError, match="403: not yours") as refused:
        _client([httpx.Response(403, json={"detail": "not yours"})], waits).release(
            runner="cpu-1", job_id=7, attempt=1, reason="x"
        )
    assert refused.value.status == 403
    assert waits == []
