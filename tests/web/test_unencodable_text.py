"""A lone UTF-16 surrogate (JSON ``"\\udfff"``), which UTF-8 cannot encode, anywhere in an upload: in a
free-form field (``environment``, ``perf_dump``), a key, a list, at any depth, is refused at the
boundary with a 422 naming where it is, on every upload route (a batch refuses that item alone) and on
the runner's registration; a signed webhook delivery holding one is a 400 and nothing is stored. A
value stored before the check existed is shown with U+FFFD, never a 500."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads, result_body
from tests.fakes.fake_github import FakeGithub
from tests.web.api.test_jobs_batch import auth, leased_jobs, result
from tracker.github.client import GithubClient
from tracker.github.webhook import sign
from tracker.models import GithubDelivery, Run, RunArtifacts
from tracker.settings import Settings
from web.api.github import get_github_client

LONE = "\udfff"
SECRET = "whsec-unencodable-0123456789"
COMMENT = Path(__file__).resolve().parents[1] / "data" / "github" / "issue_comment_created_pr.json"
# (what the upload carries, where the refusal says it is)
UNSOUND = [
    ({"environment": {"gpu": LONE}}, "environment: environment.gpu holds a lone UTF-16 surrogate (U+DFFF)"),
    ({"environment": {LONE: "H200"}}, "environment: a key of environment holds a lone UTF-16 surrogate"),
    ({"perf_dump": {"steps": [{"name": f"denoise{LONE}"}]}}, "perf_dump: perf_dump.steps[0].name holds"),
    ({"warnings": ["\ud800"]}, "warnings: warnings[0] holds a lone UTF-16 surrogate (U+D800)"),
]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"github_webhook_secret": SecretStr(SECRET)})


def _post(client: TestClient, url: str, token: str, body: Any) -> Response:
    """``body`` as JSON with ``\\u`` escapes (httpx's ``json=`` cannot encode a lone surrogate)."""
    headers = {**auth(token), "Content-Type": "application/json"}
    answer: Response = client.post(url, content=json.dumps(body), headers=headers)
    return answer


def _runs(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(Run)) or 0


@pytest.mark.parametrize(("fields", "message"), UNSOUND)
def test_an_import_is_refused_naming_the_field(
    client: TestClient, runner_token: str, session: Session, fields: dict[str, Any], message: str
) -> None:
    answer = _post(client, "/api/v1/results", runner_token, result_body(**fields))
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(message)
    assert _runs(session) == 0


@pytest.mark.parametrize(("fields", "message"), UNSOUND)
def test_a_job_result_is_refused_naming_the_field(
    client: TestClient, runner_token: str, admin_token: str, fields: dict[str, Any], message: str
) -> None:
    [job] = leased_jobs(client, runner_token, admin_token, 1)
    answer = _post(client, f"/api/v1/jobs/{job}/result", runner_token, result(**fields))
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(message)
    assert client.get(f"/api/v1/jobs/{job}").json()["state"] == "leased"


def test_a_batch_of_imports_refuses_each_unsound_item_alone(client: TestClient, runner_token: str) -> None:
    items = [
        result_body(environment={"gpu": LONE}),
        result_body(commit={"sha": "4739f2e", "title": f"Fuse {LONE}"}),  # a str field, read from a list
        result_body(**{f"extra{LONE}": 1}),
        result_body(commit={"sha": "9c1d5e2"}, environment={"gpu": "H200 😀"}),
    ]
    answer = _post(client, "/api/v1/results/batch", runner_token, {"results": items})
    assert answer.status_code == 200, answer.text
    lines = [(line["outcome"], line["field"]) for line in answer.json()["items"]]
    assert lines == [("refused", "environment"), ("refused", "commit"), ("refused", "body"), ("stored", None)]
    assert LONE not in answer.text
    run = client.get(f"/api/v1/runs/{answer.json()['items'][3]['run_id']}").json()
    assert run["environment"] == {"gpu": "H200 😀"}


def test_a_batch_of_job_results_refuses_each_unsound_item_alone(
    client: TestClient, runner_token: str, admin_token: str
) -> None:
    bad, odd, fine = leased_jobs(client, runner_token, admin_token, 3)
    items = [
        {"job_id": bad, "result": result(perf_dump={"x": [LONE]})},
        {"job_id": odd, "result": result(), f"note{LONE}": 1},
        {"job_id": fine, "result": result()},
    ]
    answer = _post(client, "/api/v1/jobs/results", runner_token, {"results": items})
    assert answer.status_code == 200, answer.text
    lines = [(line["job_id"], line["outcome"]) for line in answer.json()["items"]]
    assert lines == [(bad, "refused"), (odd, "refused"), (fine, "stored")]
    assert "unicode string" in answer.json()["items"][1]["reason"]


def test_a_runner_label_is_refused(client: TestClient, runner_token: str) -> None:
    body = {"name": "h200-1", "hardware": "H200", "gpu_count": 8, "labels": {"rack": LONE}}
    answer = _post(client, "/api/v1/runners", runner_token, body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith("labels: labels.rack holds")


def test_a_key_of_a_batch_itself_is_refused(client: TestClient, runner_token: str) -> None:
    answer = _post(client, "/api/v1/results/batch", runner_token, {"results": [], LONE: 1})
    assert answer.status_code == 422, answer.text
    assert "unicode string" in answer.json()["detail"]


@pytest.mark.parametrize("body", [f"/perf {LONE}", "/perf"])
def test_a_signed_webhook_delivery_holding_one_is_refused_and_nothing_is_stored(
    client: TestClient, session: Session, body: str
) -> None:
    fake = FakeGithub()
    github = GithubClient(
        token="ghp_test_token", transport=fake.transport(), attempts=1, sleep=lambda _s: None
    )
    client.app.dependency_overrides[get_github_client] = lambda: github  # type: ignore[attr-defined]
    payload = json.loads(COMMENT.read_text())
    payload["comment"]["body"] = body
    payload["sender"] = {"login": f"someone{LONE}"}  # a part the bot does not read holds one too
    raw = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "delivery-unencodable",
        "X-Hub-Signature-256": sign(SECRET, raw),
        "Content-Type": "application/json",
    }
    answer = client.post("/api/v1/github/webhook", content=raw, headers=headers)
    github.close()
    assert answer.status_code == 400, answer.text
    assert "lone UTF-16 surrogate" in answer.json()["detail"]
    assert session.scalar(select(func.count()).select_from(GithubDelivery)) == 0


def test_a_value_stored_before_the_check_is_shown_with_a_replacement_character(
    client: TestClient, runner_token: str, session: Session
) -> None:
    run_ids = [
        _post(client, "/api/v1/results", runner_token, body).json()["run_id"]
        for body in regression_payloads()
    ]
    # As an older version stored them (SQLite's JSON column takes the escape; PostgreSQL's JSONB never did).
    for artifacts in session.scalars(select(RunArtifacts).where(RunArtifacts.run_id.in_(run_ids))):
        artifacts.environment = {"gpu": f"H200{LONE}", LONE: "x"}
        artifacts.perf_dump = {"steps": [LONE]}
    for run in session.scalars(select(Run).where(Run.id.in_(run_ids))):
        run.warnings = [f"odd {LONE}"]
    session.commit()
    [alert] = client.get("/api/v1/alerts").json()
    for url in [
        f"/api/v1/runs/{run_ids[1]}",
        f"/runs/{run_ids[1]}",
        "/api/v1/alerts",
        "/api/v1/alerts?status=fixed",
        f"/api/v1/alerts/{alert['id']}",
        f"/alerts/{alert['id']}",
        "/alerts",
        "/series/qwen-image-t2i-1024/H200",
    ]:
        assert client.get(url).status_code == 200, url
    run = client.get(f"/api/v1/runs/{run_ids[1]}").json()
    assert run["environment"] == {"gpu": "H200\ufffd", "\ufffd": "x"}


@pytest.mark.dialect  # PostgreSQL's JSONB refuses NaN: stored as null on both databases
def test_nan_and_infinity_in_the_environment_are_stored_as_null(
    client: TestClient, runner_token: str, session: Session
) -> None:
    environment = {"clock_mhz": float("nan"), "limits": [float("inf"), 1980.0]}
    answer = _post(client, "/api/v1/results", runner_token, result_body(environment=environment))
    assert answer.status_code == 201, answer.text
    stored = session.scalars(select(RunArtifacts)).one()
    assert stored.environment == {"clock_mhz": None, "limits": [None, 1980.0]}
