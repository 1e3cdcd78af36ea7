"""/metrics: the database figures follow the queue and the runs; this process' counters follow what it did.

In-process counters are shared by every test of the session, so tests compare a scrape before and
after an action; the database figures live in the test's rolled-back transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import result_body
from tracker.github.webhook import sign
from tracker.models import Job, utcnow
from tracker.observability.metrics import DatabaseCollector
from tracker.settings import Settings
from tracker.workflows import jobs as workflow_jobs
from web.app import create_app
from web.metrics import webhook_outcome

ENQUEUE = {"case": "qwen-image-t2i-1024", "hardware": "H200", "commit": {"sha": "abcdef1"}}
RUNNER = {"name": "h200-metrics", "hardware": "H200", "gpu_count": 8}
WEBHOOK_SECRET = "whsec-metrics-0123456789"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: TestClient, headers: dict[str, str] | None = None) -> Samples:
    response = client.get("/metrics", headers=headers or {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def enqueue(client: TestClient, admin_token: str, patch: str) -> int:
    body = {**ENQUEUE, "patches": [patch]}
    response = client.post("/api/v1/jobs", json=body, headers=auth(admin_token))
    assert response.status_code == 201, response.text
    return int(response.json()["job"]["id"])


def claim(client: TestClient, runner_token: str) -> int:
    assert client.post("/api/v1/runners", json=RUNNER, headers=auth(runner_token)).status_code == 200
    claimed = client.post(f"/api/v1/runners/{RUNNER['name']}/claim", headers=auth(runner_token))
    assert claimed.status_code == 200, claimed.text
    return int(claimed.json()["job_id"])


def test_queue_depth_by_hardware_and_state(client: TestClient, admin_token: str, runner_token: str) -> None:
    before = scrape(client)
    assert value(before, "perftrack_jobs", hardware="H200", state="queued") == 0
    assert ("perftrack_jobs", frozenset({("hardware", "GB300"), ("state", "queued")})) in before
    for patch in ("#1", "#2", "#3"):
        enqueue(client, admin_token, patch)
    queued = scrape(client)
    assert value(queued, "perftrack_jobs", hardware="H200", state="queued") == 3
    assert value(queued, "perftrack_jobs", hardware="GB300", state="queued") == 0
    claim(client, runner_token)
    leased = scrape(client)
    assert value(leased, "perftrack_jobs", hardware="H200", state="queued") == 2
    assert value(leased, "perftrack_jobs", hardware="H200", state="leased") == 1
    assert value(leased, "perftrack_database_up") == 1


def test_ingested_results_counted_once_and_detection_timed(client: TestClient, runner_token: str) -> None:
    before = scrape(client)
    body = result_body()
    assert client.post("/api/v1/results", json=body, headers=auth(runner_token)).status_code == 201
    assert client.post("/api/v1/results", json=body, headers=auth(runner_token)).status_code == 200
    after = scrape(client)
    ingested = "perftrack_results_ingested_total"
    assert value(after, ingested, source="import", status="ok") == (
        value(before, ingested, source="import", status="ok") + 1
    )
    # Storing a result evaluates its series: the detection histogram saw one more evaluation.
    count = "perftrack_detection_seconds_count"
    assert value(after, count, scope="series") > value(before, count, scope="series")


def test_sweep_is_timed(client: TestClient, admin_token: str) -> None:
    before = scrape(client)
    assert client.post("/api/v1/alerts/sweep", headers=auth(admin_token)).status_code == 200
    after = scrape(client)
    count = "perftrack_detection_seconds_count"
    assert value(after, count, scope="sweep") == value(before, count, scope="sweep") + 1


def test_failed_run_counted_by_reason(
    client: TestClient, admin_token: str, runner_token: str, import_token: str
) -> None:
    job_id = enqueue(client, admin_token, "#7")
    assert claim(client, runner_token) == job_id
    before = scrape(client)
    assert value(before, "perftrack_runs_failed_total", reason="timeout") == 0
    failed = {"attempt": 1, "status": "failed", "failure_reason": "timed out after 1800 s", "raw_log": "..."}
    stored = client.post(
        f"/api/v1/jobs/{job_id}/result?runner={RUNNER['name']}", json=failed, headers=auth(runner_token)
    )
    assert stored.status_code == 201, stored.text
    odd = result_body(status="failed", failure_reason="the GPU caught fire", step_times_ms=[])
    odd.pop("denoise_step_mean_ms")
    odd.pop("denoise_stage_ms")
    odd.pop("stages")
    assert client.post("/api/v1/results", json=odd, headers=auth(import_token)).status_code == 201
    # A commit whose command line cannot take the case: a class of its own, never a measurement.
    setup = {**odd, "failure_reason": "setup failed: `sglang generate` at 1a2b3c4d5e6f has no option --x"}
    setup["commit"] = {**setup["commit"], "sha": "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"}
    assert client.post("/api/v1/results", json=setup, headers=auth(import_token)).status_code == 201
    after = scrape(client)
    assert value(after, "perftrack_runs_failed_total", reason="setup") == (
        value(before, "perftrack_runs_failed_total", reason="setup") + 1
    )
    assert value(after, "perftrack_runs_failed_total", reason="timeout") == 1
    assert value(after, "perftrack_runs_failed_total", reason="other") == (
        value(before, "perftrack_runs_failed_total", reason="other") + 1
    )
    assert value(after, "perftrack_runs_failed_total", reason="killed") == 0
    ingested = "perftrack_results_ingested_total"
    assert value(after, ingested, source="job", status="failed") == (
        value(before, ingested, source="job", status="failed") + 1
    )
    assert value(after, "perftrack_jobs", hardware="H200", state="leased") == 0


def test_lease_expiry_overdue_then_counted(
    client: TestClient, session: Session, admin_token: str, runner_token: str
) -> None:
    job_id = claim_after_enqueue(client, admin_token, runner_token)
    job = session.get(Job, job_id)
    assert job is not None
    job.lease_expires_at = utcnow() - dt.timedelta(minutes=1)
    session.commit()
    overdue = scrape(client)
    assert value(overdue, "perftrack_leases_overdue") == 1
    expired = workflow_jobs.expire(session=session)
    session.commit()
    assert [job.id for job in expired] == [job_id]
    after = scrape(client)
    assert value(after, "perftrack_leases_overdue") == 0
    assert (
        value(after, "perftrack_lease_expiries_total") == value(overdue, "perftrack_lease_expiries_total") + 1
    )
    assert value(after, "perftrack_jobs", hardware="H200", state="queued") == 1


def claim_after_enqueue(client: TestClient, admin_token: str, runner_token: str) -> int:
    job_id = enqueue(client, admin_token, "#9")
    assert claim(client, runner_token) == job_id
    return job_id


@pytest.fixture
def webhook_client(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> TestClient:
    configured = settings.model_copy(update={"github_webhook_secret": SecretStr(WEBHOOK_SECRET)})
    app = create_app(configured, engine, sessions=sessions, prepare=False)
    return TestClient(app)


def test_webhook_outcomes(webhook_client: TestClient) -> None:
    url = "/api/v1/github/webhook"
    body = json.dumps({"zen": "Keep it logically awesome."}).encode()
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "metrics-delivery-1"}
    name = "perftrack_github_webhook_deliveries_total"
    before = scrape(webhook_client)
    bad = webhook_client.post(url, content=body, headers={**headers, "X-Hub-Signature-256": "sha256=00"})
    assert bad.status_code == 401
    signed = {**headers, "X-Hub-Signature-256": sign(WEBHOOK_SECRET, body)}
    assert webhook_client.post(url, content=body, headers=signed).json() == {"outcome": "pong"}
    assert webhook_client.post(url, content=body, headers=signed).json() == {"outcome": "already handled"}
    after = scrape(webhook_client)
    for outcome in ("bad_signature", "ping", "duplicate"):
        assert value(after, name, outcome=outcome) == value(before, name, outcome=outcome) + 1, outcome
    assert value(after, name, outcome="accepted") == value(before, name, outcome="accepted")


@pytest.mark.parametrize(
    ("code", "outcome", "expected"),
    [
        (200, "comparison 12 created", "accepted"),
        (200, "refused: someone may not run /perf", "refused"),
        (200, "invalid command: no such case", "rejected"),
        (200, "ignored: no /perf command", "ignored"),
        (202, "ignored", "ignored"),
        (202, "queued", "queued"),
        (200, "already queued", "duplicate"),
        (502, "GitHub did not answer as expected", "error"),
        (503, "not set up", "not_configured"),
        (400, "the body is not JSON", "bad_request"),
    ],
)
def test_webhook_outcome_classes(code: int, outcome: str, expected: str) -> None:
    assert webhook_outcome(code, outcome) == expected


def test_requests_counted_by_route_template_with_request_id(client: TestClient) -> None:
    before = scrape(client)
    missing = client.get("/api/v1/runs/987654", headers={"X-Request-ID": "trace-42"})
    assert missing.status_code == 404
    assert missing.headers["X-Request-ID"] == "trace-42"
    generated = client.get("/no/such/page", headers={"X-Request-ID": "not ok: spaces"})
    assert generated.status_code == 404
    assert generated.headers["X-Request-ID"] not in ("", "not ok: spaces")
    assert client.get("/api/v1/cases/qwen-image-t2i-1024").status_code == 200
    assert client.get("/static/perftrack.css").status_code == 200
    after = scrape(client)
    requests = "perftrack_http_requests_total"
    for template in ("/api/v1/cases/{slug}", "/static"):
        labels = {"method": "GET", "route": template, "status": "200"}
        assert value(after, requests, **labels) == value(before, requests, **labels) + 1, template
    route = {"method": "GET", "route": "/api/v1/runs/{run_id}", "status": "404"}
    assert value(after, requests, **route) == value(before, requests, **route) + 1
    unmatched = {"method": "GET", "route": "<unmatched>", "status": "404"}
    assert value(after, requests, **unmatched) == value(before, requests, **unmatched) + 1
    assert not any("987654" in dict(labels).get("route", "") for _name, labels in after)
    latency = "perftrack_http_request_duration_seconds_count"
    assert value(after, latency, method="GET", route="/api/v1/runs/{run_id}") == (
        value(before, latency, method="GET", route="/api/v1/runs/{run_id}") + 1
    )


@pytest.fixture
def guarded(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> TestClient:
    configured = settings.model_copy(update={"metrics_token": SecretStr("metrics-token-0123456789")})
    return TestClient(create_app(configured, engine, sessions=sessions, prepare=False))  # type: ignore[arg-type]


def test_metrics_token(guarded: TestClient) -> None:
    assert guarded.get("/metrics").status_code == 401
    assert guarded.get("/metrics", headers=auth("metrics-token-012345678")).status_code == 401
    assert guarded.get("/metrics", headers={"Authorization": "metrics-token-0123456789"}).status_code == 401
    samples = scrape(guarded, auth("metrics-token-0123456789"))
    assert value(samples, "perftrack_database_up") == 1


def test_metrics_not_in_openapi_and_open_without_token(client: TestClient) -> None:
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]
    assert client.get("/metrics").status_code == 200


def test_database_down_reported_not_raised(tmp_path: Path) -> None:
    broken = create_engine(f"sqlite:///{tmp_path / 'missing' / 'no.db'}")
    families = list(DatabaseCollector(sessionmaker(bind=broken)).collect())
    assert [(family.name, [sample.value for sample in family.samples]) for family in families] == [
        ("perftrack_database_up", [0.0])
    ]


def test_invented_methods_add_no_series(client: TestClient) -> None:
    # The "other" series, and the scrape's own, exist once these ran.
    assert client.request("XMETHOD0", "/healthz").status_code == 405
    assert client.request("XMETHOD0", "/no/such/page").status_code == 404
    scrape(client)
    before = scrape(client)
    for number in range(1, 6):
        assert client.request(f"XMETHOD{number}", "/healthz").status_code == 405
        assert client.request(f"XMETHOD{number}", "/no/such/page").status_code == 404
    after = scrape(client)
    assert set(after) == set(before)
    assert not any("XMETHOD" in dict(labels).get("method", "") for _name, labels in after)
    other = {"method": "other", "route": "/healthz", "status": "405"}
    assert value(after, "perftrack_http_requests_total", **other) == (
        value(before, "perftrack_http_requests_total", **other) + 5
    )
