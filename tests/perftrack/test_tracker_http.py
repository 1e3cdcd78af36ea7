"""The CLI's calls to the tracker: which are sent again, and the clean failures when they fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import typer

from perftrack.cli.tracker_http import (
    CLI_RETRY,
    post_result,
    post_results,
    read_comparison,
    request_comparison,
)
from runners.http import TrackerHttp

Answer = httpx.Response | Exception
Call = Callable[[TrackerHttp], dict[str, Any]]

UNAVAILABLE = {"detail": "the database is unavailable; retry shortly"}


class Tracker:
    """A fake tracker answering from a script; it counts what it was sent."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.sent = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def import_one(tracker: TrackerHttp) -> dict[str, Any]:
    return post_result(tracker, {"case": "qwen-image-t2i-1024"})


def import_batch(tracker: TrackerHttp) -> dict[str, Any]:
    return post_results(tracker, [{"case": "qwen-image-t2i-1024"}])


def read_one(tracker: TrackerHttp) -> dict[str, Any]:
    return read_comparison(tracker, 4)


def compare(tracker: TrackerHttp) -> dict[str, Any]:
    return request_comparison(tracker, {"cases": ["qwen-image-t2i-1024"]})


def tracker_at(fake: Tracker, waits: list[float]) -> TrackerHttp:
    return TrackerHttp.connect(
        "http://tracker", "pt_token", retry=CLI_RETRY, transport=httpx.MockTransport(fake), sleep=waits.append
    )


def failure(call: Call, fake: Tracker, capsys: pytest.CaptureFixture[str]) -> str:
    """What the command prints when ``call`` fails it (exit status 1)."""
    with pytest.raises(typer.Exit) as exited:
        call(tracker_at(fake, []))
    assert exited.value.exit_code == 1
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize("call", [import_one, import_batch, read_one], ids=["import", "batch", "read"])
def test_imports_and_reads_are_sent_again_after_a_passing_failure(call: Call) -> None:
    fake = Tracker(
        httpx.Response(503, json=UNAVAILABLE),
        httpx.ReadTimeout("read timed out"),
        httpx.Response(200, json={"id": 4}),
    )
    waits: list[float] = []
    assert call(tracker_at(fake, waits)) == {"id": 4}
    assert waits == [0.5, 1.0]


def test_a_comparison_request_is_sent_once_unless_it_never_left(capsys: pytest.CaptureFixture[str]) -> None:
    fake = Tracker(httpx.Response(503, json=UNAVAILABLE), httpx.Response(201, json={"id": 4}))
    assert failure(compare, fake, capsys) == (
        "error: http://tracker refused the comparison (503): the database is unavailable; retry shortly"
    )
    assert fake.sent == 1  # a second would start a second comparison
    fake = Tracker(httpx.ReadTimeout("read timed out"))
    assert "cannot reach http://tracker: ReadTimeout: read timed out" in failure(compare, fake, capsys)
    fake = Tracker(httpx.ConnectError("[Errno 111] Connection refused"), httpx.Response(201, json={"id": 4}))
    waits: list[float] = []
    assert compare(tracker_at(fake, waits)) == {"id": 4}
    assert waits == [0.5]


def test_an_unreachable_tracker_is_named_after_every_try(capsys: pytest.CaptureFixture[str]) -> None:
    fake = Tracker(*[httpx.ConnectError("[Errno 111] Connection refused")] * 4)
    assert failure(import_one, fake, capsys) == (
        "error: cannot reach http://tracker: ConnectError: [Errno 111] Connection refused (after 4 tries)"
    )
    assert fake.sent == 4


def test_a_refusal_names_the_tracker_what_it_refused_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    fake = Tracker(httpx.Response(401, json={"detail": "unknown bearer token"}))
    assert (
        failure(import_one, fake, capsys)
        == "error: http://tracker refused the result (401): unknown bearer token"
    )
    assert fake.sent == 1
    fake = Tracker(*[httpx.Response(502, text="Bad Gateway")] * 4)
    assert (
        failure(import_batch, fake, capsys)
        == "error: http://tracker refused the batch (502): Bad Gateway (after 4 tries)"
    )
    fake = Tracker(httpx.Response(404, json={"detail": "no comparison 4"}))
    assert (
        failure(read_one, fake, capsys) == "error: http://tracker refused comparison 4 (404): no comparison 4"
    )


def test_an_answer_that_is_no_json_object_fails_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    fake = Tracker(httpx.Response(200, text="<html>a proxy's page</html>"))
    assert failure(read_one, fake, capsys).startswith(
        "error: http://tracker gave an unreadable answer to comparison 4: the answer to GET /comparisons/4 "
        "is no JSON object"
    )
