"""The one client of the tracker's API: what it sends again, where, and what it raises when it gives up."""

from __future__ import annotations

import httpx
import pytest

from runners.http import (
    InvalidMessage,
    RetryPolicy,
    TrackerError,
    TrackerHttp,
    TrackerUnavailable,
)

Answer = httpx.Response | Exception


class Tracker:
    """A fake tracker answering from a script, one answer a request; it records what it was sent."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok() -> httpx.Response:
    return httpx.Response(200, json={"id": 1})


def client(tracker: Tracker, waits: list[float], server: str = "http://tracker") -> TrackerHttp:
    return TrackerHttp.connect(
        server,
        "pt_token",
        retry=RetryPolicy(retries=3, backoff_s=1.0, max_backoff_s=2.0),
        transport=httpx.MockTransport(tracker),
        sleep=waits.append,
    )


# Failures after which the request may have reached the tracker, and been carried out.
MAYBE_SENT: list[Answer] = [
    httpx.Response(503, json={"detail": "the database is unavailable; retry shortly"}),
    httpx.Response(502),
    httpx.Response(429),
    httpx.ReadTimeout("read timed out"),
    httpx.RemoteProtocolError("server disconnected without sending a response"),
]
# Failures that mean the request never left this process.
NEVER_SENT: list[Answer] = [httpx.ConnectError("connection refused"), httpx.ConnectTimeout("timed out")]


@pytest.mark.parametrize("failure", MAYBE_SENT + NEVER_SENT, ids=repr)
def test_a_get_is_sent_again_after_any_passing_failure(failure: Answer) -> None:
    tracker, waits = Tracker([failure, failure, ok()]), []
    assert client(tracker, waits).json("GET", "/comparisons/1") == {"id": 1}
    assert waits == [1.0, 2.0]
    assert [request.url.path for request in tracker.requests] == ["/api/v1/comparisons/1"] * 3


@pytest.mark.parametrize("failure", MAYBE_SENT, ids=repr)
def test_a_post_is_not_sent_again_once_it_may_have_arrived(failure: Answer) -> None:
    tracker, waits = Tracker([failure, ok()]), []
    with pytest.raises(TrackerUnavailable, match=r"POST /comparisons: .* \(after 1 tries\)"):
        client(tracker, waits).json("POST", "/comparisons", json={})
    assert waits == []
    assert len(tracker.requests) == 1


@pytest.mark.parametrize("failure", NEVER_SENT, ids=repr)
def test_a_post_that_never_left_is_sent_again(failure: Answer) -> None:
    tracker, waits = Tracker([failure, ok()]), []
    assert client(tracker, waits).json("POST", "/comparisons", json={}) == {"id": 1}
    assert waits == [1.0]


@pytest.mark.parametrize("failure", MAYBE_SENT, ids=repr)
def test_a_post_marked_idempotent_is_sent_again(failure: Answer) -> None:
    tracker, waits = Tracker([failure, ok()]), []
    assert client(tracker, waits).json("POST", "/results", idempotent=True, json={}) == {"id": 1}
    assert waits == [1.0]
    assert [request.content for request in tracker.requests] == [b"{}", b"{}"]


def test_giving_up_says_what_went_wrong_last_and_how_often_it_was_tried() -> None:
    waits: list[float] = []
    busy = Tracker([httpx.Response(503, json={"detail": "restarting"})] * 4)
    with pytest.raises(
        TrackerUnavailable, match=r"GET /alerts: tracker answered 503: restarting \(after 4 tries\)"
    ) as gone:
        client(busy, waits).request("GET", "/alerts")
    assert (gone.value.status, gone.value.answered, gone.value.reason, gone.value.tries) == (
        0,
        503,
        "restarting",
        4,
    )
    assert waits == [1.0, 2.0, 2.0]  # doubled, capped

    down = Tracker([httpx.ConnectError("[Errno 111] Connection refused")] * 4)
    with pytest.raises(
        TrackerUnavailable, match=r"cannot reach the tracker: ConnectError: \[Errno 111\]"
    ) as gone:
        client(down, []).request("GET", "/alerts")
    assert (gone.value.answered, gone.value.tries) == (None, 4)

    with pytest.raises(TrackerUnavailable, match=r"\(after 1 tries\)"):
        client(Tracker([httpx.Response(503)]), []).request("GET", "/alerts", retries=0)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422, 501])
def test_a_refusal_is_never_sent_again(status: int) -> None:
    tracker, waits = Tracker([httpx.Response(status, json={"detail": "no such case 'x'"})]), []
    with pytest.raises(TrackerError) as refused:
        client(tracker, waits).json("GET", "/cases/x")
    assert type(refused.value) is TrackerError
    assert (refused.value.status, refused.value.detail) == (status, "no such case 'x'")
    assert waits == []


def test_a_refusal_without_json_shows_the_start_of_its_body() -> None:
    tracker = Tracker([httpx.Response(413, text="<html>Request Entity Too Large</html>")])
    with pytest.raises(TrackerError, match="413: <html>Request Entity Too Large"):
        client(tracker, []).json("POST", "/results", json={})


@pytest.mark.parametrize("body", ["not json", "[1, 2]", ""])
def test_an_answer_that_is_no_json_object_is_an_invalid_message(body: str) -> None:
    tracker = Tracker([httpx.Response(200, text=body)])
    with pytest.raises(InvalidMessage, match="the answer to GET /comparisons/1 is no JSON object") as bad:
        client(tracker, []).json("GET", "/comparisons/1")
    assert bad.value.status == 200


def test_requests_carry_the_token_and_go_under_the_servers_path() -> None:
    tracker = Tracker([ok()])
    http = client(tracker, [], server="https://example.org/perftrack/")
    assert http.server == "https://example.org/perftrack"
    http.json("GET", "/runs/1")
    (request,) = tracker.requests
    assert str(request.url) == "https://example.org/perftrack/api/v1/runs/1"
    assert request.headers["Authorization"] == "Bearer pt_token"
    assert request.headers["User-Agent"] == "perftrack"


def test_it_can_send_through_an_httpx_client_it_is_given() -> None:
    tracker = Tracker([ok()])
    given = httpx.Client(
        base_url="http://testserver",
        headers={"Authorization": "Bearer pt_admin"},
        transport=httpx.MockTransport(tracker),
    )
    assert TrackerHttp(given).json("GET", "/comparisons/1") == {"id": 1}
    assert tracker.requests[0].headers["Authorization"] == "Bearer pt_admin"
    assert str(tracker.requests[0].url) == "http://testserver/api/v1/comparisons/1"
