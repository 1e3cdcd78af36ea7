"""One redactor for stored runs and error answers: a ``ghp_`` token is kept out of an error answer
as a ``pt_`` one is, and the secrets the tracker holds are kept out of what a run stores."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.models import RunArtifacts
from tracker.settings import Settings

GH_TOKEN = "ghp_" + "Zz9" * 12
WEBHOOK_SECRET = "whsec-held-0123456789abcdef"
SESSION_SECRET = "session-held-0123456789abcdef"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "github_webhook_secret": SecretStr(WEBHOOK_SECRET),
            "session_secret": SecretStr(SESSION_SECRET),
        }
    )


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("POST", "/api/v1/results", result_body(case=GH_TOKEN)),
        ("POST", "/api/v1/results", result_body(hardware=f"TOKEN={GH_TOKEN}")),
        ("GET", f"/api/v1/alerts?status=a_{GH_TOKEN}", None),
        ("GET", f"/alerts?status=x{GH_TOKEN}", None),  # a page: 200, the refusal shown in it
        ("GET", f"/api/v1/series/{GH_TOKEN}/H200", None),
    ],
)
def test_an_error_answer_never_echoes_a_github_token(
    client: TestClient, import_token: str, method: str, url: str, body: object
) -> None:
    answer = client.request(method, url, json=body, headers=auth(import_token))
    assert answer.status_code < 500, answer.text
    assert "Zz9Zz9" not in answer.text
    assert "[redacted]" in answer.text


def test_a_stored_run_holds_none_of_the_trackers_secrets(
    client: TestClient, session: Session, import_token: str
) -> None:
    raw_log = "\n".join(
        [
            "[06-01 12:00:00] [DenoisingStage] finished in 13.1895 seconds",
            f"webhook secret {WEBHOOK_SECRET} and session secret {SESSION_SECRET}",
            f'{{"api_key": "abc-123-def", "token_url": "https://u:pw-123@host/x?token%3D{GH_TOKEN}"}}',
        ]
    )
    body = result_body(
        raw_log=raw_log,
        environment={"gpu": "H200", "SECRET_KEY_BASE": "base-0123", GH_TOKEN: "set"},
        warnings=[f"\x1b[31mgh\x1b[0mp_{'Zz9' * 12}"],
    )
    answer = client.post("/api/v1/results", json=body, headers=auth(import_token))
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["run_id"]
    stored = session.get(RunArtifacts, run_id)
    assert stored is not None
    texts = [
        client.get(f"/api/v1/runs/{run_id}/log").text,
        client.get(f"/api/v1/runs/{run_id}").text,
        client.get(f"/runs/{run_id}").text,
        stored.raw_log,
        json.dumps(stored.environment),
    ]
    for text in texts:
        for secret in (WEBHOOK_SECRET, SESSION_SECRET, "abc-123-def", "pw-123", "Zz9Zz9", "base-0123"):
            assert secret not in text
    assert "finished in 13.1895 seconds" in texts[0]
    assert stored.environment["gpu"] == "H200"


def test_a_release_reason_is_stored_redacted(client: TestClient, admin_token: str, runner_token: str) -> None:
    enqueue = {"case": "qwen-image-t2i-1024", "hardware": "H200", "commit": {"sha": "669a9bd"}}
    job_id = client.post("/api/v1/jobs", json=enqueue, headers=auth(admin_token)).json()["job"]["id"]
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=auth(runner_token)).status_code == 200
    assert client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token)).status_code == 200
    release = {"attempt": 1, "reason": f"shutting down; HF_TOKEN: hf-secret-value {GH_TOKEN}"}
    answer = client.post(
        f"/api/v1/jobs/{job_id}/release?runner=h200-1", json=release, headers=auth(runner_token)
    )
    assert answer.status_code == 200, answer.text
    [attempt] = client.get(f"/api/v1/jobs/{job_id}").json()["attempt_history"]
    assert attempt["reason"] == "shutting down; HF_TOKEN: [redacted] [redacted]"
