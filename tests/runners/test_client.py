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


@pytest.mark.parametrize(
    "failure",
    [httpx.Response(503), httpx.Response(502), httpx.ReadTimeout("read timed out")],
    ids=repr,
)
def test_a_claim_that_may_have_leased_a_job_is_not_sent_again(failure: httpx.Response | Exception) -> None:
    """A lost claim answer leased a job; a repeat would lease a second one. The agent's next poll
    is the retry, and the lost job's lease expires."""
    answers: list[httpx.Response | Exception] = [failure, httpx.Response(204)]
    waits: list[float] = []
    with pytest.raises(TrackerUnavailable, match=r"\(after 1 tries\)"):
        _client(answers, waits).claim("cpu-1", wait_s=5)
    assert waits == []
    assert len(answers) == 1


def test_a_claim_that_never_left_is_sent_again() -> None:
    answers: list[httpx.Response | Exception] = [
        httpx.ConnectError("connection refused"),
        httpx.Response(204),
    ]
    waits: list[float] = []
    assert _client(answers, waits).claim("cpu-1") is None
    assert waits == [1.0]


@pytest.mark.parametrize(
    "failure",
    [httpx.Response(503), httpx.ReadTimeout("read timed out"), httpx.RemoteProtocolError("disconnected")],
    ids=repr,
)
def test_what_the_tracker_takes_twice_is_sent_again(
    failure: httpx.Response | Exception,
) -> None:
    stored = httpx.Response(200, json={"run_id": 3, "created": False})
    answers: list[httpx.Response | Exception] = [failure, stored]
    waits: list[float] = []
    assert _client(answers, waits).upload(runner="cpu-1", job_id=7, payload={"attempt": 1})["run_id"] == 3
    batch = httpx.Response(
        200,
        json={
            "items": [{"index": 0, "outcome": "duplicate", "run_id": 3}],
            "stored": 0,
            "duplicate": 1,
            "refused": 0,
        },
    )
    answers = [failure, batch]
    assert (
        _client(answers, waits).upload_batch(runner="cpu-1", uploads=[(7, {"attempt": 1})]).items[0].run_id
        == 3
    )
    answers = [failure, httpx.Response(200, json={"id": 7})]
    _client(answers, waits).release(runner="cpu-1", job_id=7, attempt=1, reason="stopping")
    answers = [failure, httpx.Response(200, json={"id": 1})]
    _client(answers, waits).register(
        name="cpu-1", hardware="cpu", gpu_count=1, labels={}, version="", host=""
    )
    assert waits == [1.0] * 4


def test_an_upload_whose_lease_is_gone_is_lease_lost() -> None:
    answers: list[httpx.Response | Exception] = [httpx.Response(409, json={"detail": "lease expired"})]
    with pytest.raises(LeaseLost, match="409: lease expired"):
        _client(answers, []).upload(runner="cpu-1", job_id=7, payload={"attempt": 1})
