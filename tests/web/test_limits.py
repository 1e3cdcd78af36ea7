"""Limits: request body size (declared or chunked), log size, page size caps, and a GitHub API that
never answers (the call fails after the configured timeout; the outbox keeps the row for later)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import regression_payloads, result_body
from tracker.github.client import GithubClient, GithubError
from tracker.github.outbox import FlushReport, flush_outbox, queue
from tracker.models import GithubOutbox, Run
from tracker.settings import Settings
from web.app import create_app

RESULTS = "/api/v1/results"
GITHUB_TOKEN = "ghp_never_echo_this_0123456789"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def runs(session: Session) -> int:
    session.expire_all()
    return session.scalar(select(func.count()).select_from(Run)) or 0


# --- request body size ---


def test_a_declared_oversized_body_is_refused_before_it_is_read(
    client: TestClient, session: Session, settings: Settings, runner_token: str
) -> None:
    body = b"x" * (settings.max_request_bytes + 1)
    answer = client.post(
        RESULTS, content=body, headers={**auth(runner_token), "Content-Type": "application/json"}
    )
    assert answer.status_code == 413
    assert f"limit of {settings.max_request_bytes} bytes" in answer.json()["detail"]
    assert runs(session) == 0


def _chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        chunk = b" " * min(size, total - sent)
        sent += len(chunk)
        yield chunk


def test_a_chunked_body_without_content_length_is_cut_off_at_the_limit(
    client: TestClient, session: Session, settings: Settings, runner_token: str
) -> None:
    answer = client.post(
        RESULTS,
        content=_chunks(settings.max_request_bytes + 10),
        headers={**auth(runner_token), "Content-Type": "application/json"},
    )
    assert "content-length" not in {key.lower() for key in answer.request.headers}
    assert answer.request.headers["transfer-encoding"] == "chunked"
    assert answer.status_code == 413
    assert runs(session) == 0


def test_a_chunked_body_under_the_limit_is_stored(
    client: TestClient, session: Session, runner_token: str
) -> None:
    import json

    raw = json.dumps(result_body()).encode()
    pieces = iter([raw[:100], raw[100:]])
    answer = client.post(
        RESULTS, content=pieces, headers={**auth(runner_token), "Content-Type": "application/json"}
    )
    assert answer.status_code == 201, answer.text
    assert runs(session) == 1


# --- log size ---


def test_a_log_over_the_log_limit_is_refused_and_nothing_is_stored(
    client: TestClient, session: Session, settings: Settings, runner_token: str
) -> None:
    assert settings.max_log_bytes < settings.max_request_bytes  # the log limit, not the body limit, trips
    body = result_body(raw_log="y" * (settings.max_log_bytes + 1))
    answer = client.post(RESULTS, json=body, headers=auth(runner_token))
    assert answer.status_code == 413
    assert answer.json()["detail"].startswith("raw_log:")
    assert runs(session) == 0
    just_fits = result_body(raw_log="y" * (settings.max_log_bytes - 1024))
    assert client.post(RESULTS, json=just_fits, headers=auth(runner_token)).status_code == 201


# --- page size caps ---

# Every list endpoint that takes ``limit``; a new one fails the test until it is seeded below.
SEEDED = {
    "/api/v1/series/{case}/{hardware}": "/api/v1/series/qwen-image-t2i-1024/H200",
    "/api/v1/series/{case}/{hardware}/chart": "/api/v1/series/qwen-image-t2i-1024/H200/chart",
    "/api/v1/jobs": "/api/v1/jobs",
    "/api/v1/comparisons": "/api/v1/comparisons",
    "/api/v1/alerts": "/api/v1/alerts",
    "/api/v1/calibrations": "/api/v1/calibrations",
    "/api/v1/groups": "/api/v1/groups",
    "/api/v1/nights": "/api/v1/nights",  # with nights: tests/web/api/test_nights.py
}
# seeded with fewer than cap + 1 items
THIN = {"/api/v1/alerts", "/api/v1/calibrations", "/api/v1/groups", "/api/v1/nights"}


def _count(payload: Any) -> int:
    if isinstance(payload, list):
        return len(payload)
    return len(payload["points"])


@pytest.fixture
def capped(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> Iterator[TestClient]:
    """The app with a page size of 1, on the test's transaction."""
    app = create_app(
        settings.model_copy(update={"max_page_size": 1}), engine, sessions=sessions, prepare=False
    )
    with TestClient(app) as test_client:
        yield test_client


def test_every_list_endpoint_caps_limit_at_the_max_page_size(
    client: TestClient, capped: TestClient, runner_token: str, admin_token: str
) -> None:
    for body in regression_payloads():
        assert client.post(RESULTS, json=body, headers=auth(runner_token)).status_code == 201
    for pr in (43601, 43602):
        compare = {
            "base": {"sha": "669a9bd"},
            "head": {"sha": "669a9bd", "patches": [f"#{pr}"]},
            "cases": ["qwen-image-t2i-1024"],
            "pr_number": pr,
        }
        answer = client.post("/api/v1/comparisons", json=compare, headers=auth(admin_token))
        assert answer.status_code == 201, answer.text
    schema = client.get("/openapi.json").json()
    with_limit = {
        path
        for path, item in schema["paths"].items()
        if any(parameter["name"] == "limit" for parameter in item.get("get", {}).get("parameters", []))
    }
    assert with_limit == set(SEEDED)
    for template, url in SEEDED.items():
        available = _count(client.get(url, params={"limit": 1000}).json())
        if template not in THIN:
            assert available > 1, template
        answer = capped.get(url, params={"limit": 10**6})
        assert answer.status_code == 200, (template, answer.text)
        assert _count(answer.json()) <= 1, template
        assert _count(answer.json()) == min(available, 1), template
        assert capped.get(url, params={"limit": 0}).status_code == 422, template


# --- a GitHub API that accepts connections and never answers ---


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts every connection and never sends a byte."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    host, port = listener.getsockname()
    try:
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def _hung_client(url: str) -> GithubClient:
    return GithubClient(api_url=url, token=GITHUB_TOKEN, timeout_s=0.5, attempts=2, sleep=lambda _s: None)


def _bounded(call: Any) -> BaseException | None:
    """Run ``call`` in a thread; it must end on its own (the timeout), long before the join gives up."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
        except BaseException as error:  # handed back to the test
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the GitHub call hung: no timeout"
    return outcome[0]


def test_a_github_api_that_never_answers_fails_the_call_after_the_timeout(silent_server: str) -> None:
    client = _hung_client(silent_server)
    try:
        error = _bounded(lambda: client.request("GET", "/repos/o/r/pulls/1", repository="o/r"))
    finally:
        client.close()
    assert isinstance(error, GithubError)
    assert "ReadTimeout" in str(error)
    assert GITHUB_TOKEN not in str(error)


def test_the_outbox_keeps_the_row_for_a_retry_when_github_never_answers(
    silent_server: str, session: Session, settings: Settings
) -> None:
    row = queue(session=session, kind="reaction", repository="o/r", target=7, payload={"content": "eyes"})
    session.commit()
    client = _hung_client(silent_server)
    reports: list[FlushReport] = []
    try:
        error = _bounded(
            lambda: reports.append(flush_outbox(session=session, settings=settings, client=client))
        )
    finally:
        client.close()
    assert error is None
    assert reports == [FlushReport(failed=1)]
    session.expire_all()
    kept = session.get(GithubOutbox, row.id)
    assert kept is not None
    assert kept.done_at is None
    assert kept.dead_at is None
    assert kept.attempts == 1
    assert kept.next_attempt_at is not None
    assert kept.last_error is not None
    assert "ReadTimeout" in kept.last_error
    assert GITHUB_TOKEN not in kept.last_error
    assert re.search(r"reactions", kept.last_error)


# --- NUL characters (PostgreSQL text and JSONB cannot hold them) ---


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/alerts?case=%00",
        "/api/v1/cases/qwen%00",
        "/api/v1/series/qwen-image-t2i-1024/H200?metric=e2e_ms%00",
        "/api/v1/jobs?state=queued&hardware=H%00200",
    ],
    ids=["query", "path", "metric", "second-query"],
)
def test_a_nul_character_in_a_path_or_query_is_refused_with_422(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code == 422, answer.text
    assert "NUL" in answer.json()["detail"]


def test_a_nul_character_in_a_web_body_is_kept_as_a_replacement_character(
    client: TestClient, runner_token: str
) -> None:
    body = {"name": "r-nul", "hardware": "H200", "gpu_count": 1, "labels": {"rack\u0000": "a\u0000b"}}
    answer = client.post("/api/v1/runners", json=body, headers=auth(runner_token))
    assert answer.status_code == 200, answer.text
    assert answer.json()["labels"] == {"rack\ufffd": "a\ufffdb"}


@pytest.mark.parametrize(
    "url", ["/alerts?case=%00", "/series/qwen%00/H200", "/commits/abc%00", "/jobs?hardware=%00"]
)
def test_pages_refuse_a_nul_character_with_an_error_page(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("text/html")
    assert "NUL character" in answer.text
