"""No secret in a log line, a page or an error response: tokens (good, unknown, revoked, pasted into
the wrong field), the webhook secret, the GitHub token of a failing call, and configured secrets.

Every test captures all logging at DEBUG and every response body, and looks for each secret."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.access.tokens import create_token, revoke_token
from tracker.enums import TokenRole
from tracker.github.client import GithubClient, GithubError
from tracker.github.outbox import flush_outbox, queue
from tracker.github.webhook import sign
from tracker.models import GithubOutbox
from tracker.settings import Settings

WEBHOOK_SECRET = "whsec-do-not-leak-0123456789abcdef"
GITHUB_TOKEN = "ghp_do_not_leak_0123456789abcdefABCDEF"
METRICS_TOKEN = "metrics-do-not-leak-0123456789"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "github_webhook_secret": SecretStr(WEBHOOK_SECRET),
            "github_token": SecretStr(GITHUB_TOKEN),
            "metrics_token": SecretStr(METRICS_TOKEN),
        }
    )


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of every logger, at DEBUG."""
    caplog.set_level(logging.DEBUG)
    return caplog


class Seen:
    """Everything the client got back: status lines, headers and bodies."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.texts: list[str] = []

    def __call__(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response: httpx.Response = self.client.request(method, url, **kwargs)
        self.texts.append(f"{response.status_code} {dict(response.headers)} {response.text}")
        return response


def assert_nowhere(secrets: list[str], seen: list[str], logs: pytest.LogCaptureFixture) -> None:
    # httpx's own records are the test client's (the request it sent), not the server's.
    records = [record for record in logs.records if not record.name.startswith(("httpx", "httpcore"))]
    lines = [record.getMessage() for record in records]
    lines += [str(record.__dict__) for record in records]  # extra= fields and exc_info too
    for secret in secrets:
        assert secret
        leaked = [text for text in [*seen, *lines] if secret in text]
        assert not leaked, f"{secret[:6]}… leaked: {leaked[0][:300]}"


def test_tokens_never_come_back_in_responses_or_logs(
    client: TestClient,
    session: Session,
    settings: Settings,
    runner_token: str,
    admin_token: str,
    logs: pytest.LogCaptureFixture,
) -> None:
    revoked = create_token(session=session, name="old-laptop", role=TokenRole.RUNNER).secret
    revoke_token(session=session, name="old-laptop")
    session.commit()
    unknown = "pt_" + "Z" * 43
    seen = Seen(client)
    for secret in (runner_token, admin_token, revoked, unknown):
        bearer = {"Authorization": f"Bearer {secret}"}
        seen("POST", "/api/v1/results", json=result_body(), headers=bearer)
        seen("POST", "/api/v1/jobs", json={"case": "x"}, headers=bearer)
        seen("POST", "/api/v1/alerts/sweep", headers=bearer)
        seen("GET", "/api/v1/alerts", headers=bearer)
        seen(
            "POST",
            "/api/v1/results",
            content=b"{not json",
            headers={**bearer, "Content-Type": "application/json"},
        )
        # The secret pasted into the wrong places: fields, filters, paths, other headers.
        seen("POST", "/api/v1/results", json=result_body(case=secret, hardware=secret), headers=bearer)
        seen("POST", "/api/v1/results", json=result_body(commit={"sha": secret}), headers=bearer)
        seen("POST", "/api/v1/results", json={**result_body(), secret: secret}, headers=bearer)
        seen(
            "POST",
            "/api/v1/runners",
            json={"name": secret, "hardware": secret, "gpu_count": 1},
            headers=bearer,
        )
        seen("GET", "/api/v1/alerts", params={"case": secret, "status": secret})
        seen("GET", "/api/v1/jobs", params={"state": secret, "hardware": secret})
        seen("GET", "/api/v1/series/qwen-image-t2i-1024/H200", params={"metric": secret})
        seen("GET", "/api/v1/runs/not-a-number", headers={"Authorization": secret})
        seen(
            "POST",
            "/api/v1/jobs/1/heartbeat",
            params={"runner": secret},
            json={"attempt": secret},
            headers=bearer,
        )
        seen("POST", "/login", data={"token": secret, "csrf_token": "forged"})
        seen("GET", "/series/qwen-image-t2i-1024/H200", params={"metric": secret})
        seen("GET", "/alerts", params={"case": secret})
    assert_nowhere([runner_token, admin_token, revoked, unknown], seen.texts, logs)


def test_the_webhook_secret_never_comes_back_or_is_logged(
    client: TestClient, logs: pytest.LogCaptureFixture
) -> None:
    seen = Seen(client)
    raw = json.dumps({"zen": WEBHOOK_SECRET, "hook_id": 1}).encode()
    good = {
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": sign(WEBHOOK_SECRET, raw),
    }
    assert seen("POST", "/api/v1/github/webhook", content=raw, headers=good).status_code == 200
    for signature in (WEBHOOK_SECRET, f"sha256={WEBHOOK_SECRET}", sign("wrong", raw)):
        headers = {**good, "X-GitHub-Delivery": "d-2", "X-Hub-Signature-256": signature}
        assert seen("POST", "/api/v1/github/webhook", content=raw, headers=headers).status_code == 401
    not_json = b"\xff" + WEBHOOK_SECRET.encode()
    headers = {**good, "X-Hub-Signature-256": sign(WEBHOOK_SECRET, not_json), "X-GitHub-Delivery": "d-3"}
    assert seen("POST", "/api/v1/github/webhook", content=not_json, headers=headers).status_code == 400
    seen("GET", "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    seen("GET", "/healthz")
    seen("GET", "/")
    assert_nowhere([WEBHOOK_SECRET, METRICS_TOKEN], seen.texts, logs)


def _echoing_github(request: httpx.Request) -> httpx.Response:
    """A GitHub that fails and quotes the credentials it was sent (a worst case)."""
    sent = request.headers.get("Authorization", "")
    return httpx.Response(401, json={"message": f"Bad credentials: {sent}", "documentation_url": "x"})


def test_a_failing_github_call_never_shows_the_github_token(
    session: Session, settings: Settings, logs: pytest.LogCaptureFixture
) -> None:
    client = GithubClient(
        token=GITHUB_TOKEN, transport=httpx.MockTransport(_echoing_github), attempts=1, sleep=lambda _s: None
    )
    with pytest.raises(GithubError) as caught:
        client.request("GET", "/repos/o/r/pulls/1", repository="o/r")
    assert "Bad credentials" in str(caught.value)
    row = queue(session=session, kind="reaction", repository="o/r", target=1, payload={"content": "eyes"})
    session.commit()
    flush_outbox(session=session, settings=settings, client=client)
    client.close()
    session.expire_all()
    stored = session.get(GithubOutbox, row.id)
    assert stored is not None
    assert stored.last_error is not None
    assert "Bad credentials" in stored.last_error
    assert_nowhere([GITHUB_TOKEN], [str(caught.value), stored.last_error], logs)


def test_validation_errors_never_carry_the_input(client: TestClient, runner_token: str) -> None:
    marker = "pt_" + "Q" * 43
    answer = client.post(
        "/api/v1/results",
        json=result_body(
            step_times_ms=[marker], status=marker, commit={"sha": "669a9bd", "title": marker * 20}
        ),
        headers={"Authorization": f"Bearer {runner_token}"},
    )
    assert answer.status_code == 422
    body = answer.json()
    assert body["errors"]
    assert all(set(problem) == {"loc", "msg", "type"} for problem in body["errors"])
    assert marker not in answer.text
