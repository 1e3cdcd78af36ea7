"""Every mutating route refuses a missing, malformed, revoked or wrong-role token, and stores nothing.

The routes come from the app itself (tests/web/app_routes.py), so a new endpoint is covered the day
it is added; one that has no guard at all fails ``test_every_mutating_route_is_guarded``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.web.app_routes import AppRoute, Guard, mutating_routes
from tracker.access.tokens import create_token, revoke_token
from tracker.enums import AlertStatus, TokenRole
from tracker.github.webhook import sign
from tracker.models import Alert, Base, GithubDelivery
from tracker.settings import Settings

WEBHOOK = "/api/v1/github/webhook"
SECRET = "whsec-auth-matrix-0123456789"
PING = Path(__file__).resolve().parent.parent / "data" / "github" / "ping.json"
# Public on purpose: signing in and out (CSRF-checked forms) and the signed webhook.
TRIAGE = {"status": "open", "reason": "the fix did not hold"}  # a move the fixture's (fixed) alert allows
UNGUARDED = {("POST", "/login"), ("POST", "/logout"), ("POST", WEBHOOK)}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"github_webhook_secret": SecretStr(SECRET)})


@pytest.fixture
def alert_id(client: TestClient, runner_token: str) -> int:
    for body in regression_payloads():
        answer = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert answer.status_code == 201, answer.text
    [alert] = client.get("/api/v1/alerts").json()
    return int(alert["id"])


@pytest.fixture
def revoked_token(session: Session) -> str:
    issued = create_token(session=session, name="revoked-one", role=TokenRole.ADMIN)
    revoke_token(session=session, name="revoked-one")
    session.commit()
    return issued.secret


def _routes(app: FastAPI, *guards: Guard) -> list[AppRoute]:
    return [route for route in mutating_routes(app) if route.guard in guards]


def _url(route: AppRoute, alert_id: int) -> str:
    # Real ids where there is one, so a route that forgot its guard would act (and fail the test).
    values = {"alert_id": str(alert_id), "name": "test-runner"}
    return re.sub(r"\{(\w+)\}", lambda match: values.get(match.group(1), "1"), route.path)


def _snapshot(session: Session) -> dict[str, int]:
    """Rows per table, and the alert statuses: what a refused request must leave as it was."""
    session.expire_all()
    counts = {
        table.name: session.scalar(select(func.count()).select_from(table)) or 0
        for table in Base.metadata.sorted_tables
    }
    statuses = {f"alert {a.id}": list(AlertStatus).index(a.status) for a in session.scalars(select(Alert))}
    return counts | statuses


def _body(route: AppRoute) -> dict[str, Any]:
    # A body that would be valid for triage; others answer 422 if a guard is missing.
    return TRIAGE if route.path.endswith("/triage") else {}


def test_every_mutating_route_is_guarded(client: TestClient) -> None:
    routes = mutating_routes(client.app)  # type: ignore[arg-type]
    assert len(routes) >= 15
    unguarded = {(route.method, route.path) for route in routes if route.guard is Guard.NONE}
    assert unguarded == {(method, path) for method, path in UNGUARDED if path == WEBHOOK}
    csrf_only = {(route.method, route.path) for route in routes if route.guard is Guard.CSRF}
    assert csrf_only == {("POST", "/login"), ("POST", "/logout")}


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-perftrack-token",
        "Bearer pt_" + "A" * 43,
        "Bearer " + "x" * 5000,
        "bearer\tpt_tab",
    ],
    ids=["missing", "empty", "scheme-only", "blank", "basic", "garbage", "unknown", "huge", "tab"],
)
def test_missing_or_malformed_tokens_get_401_and_change_nothing(
    client: TestClient, session: Session, alert_id: int, authorization: str | None
) -> None:
    routes = _routes(client.app, Guard.RUNNER, Guard.ADMIN)  # type: ignore[arg-type]
    before = _snapshot(session)
    headers = {"Authorization": authorization} if authorization is not None else {}
    for route in routes:
        answer = client.request(route.method, _url(route, alert_id), json=_body(route), headers=headers)
        assert answer.status_code == 401, (route, answer.status_code, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["detail"]
    assert _snapshot(session) == before


def test_a_revoked_token_gets_401_everywhere_and_changes_nothing(
    client: TestClient, session: Session, alert_id: int, revoked_token: str
) -> None:
    before = _snapshot(session)
    for route in _routes(client.app, Guard.RUNNER, Guard.ADMIN):  # type: ignore[arg-type]
        answer = client.request(
            route.method,
            _url(route, alert_id),
            json=_body(route),
            headers={"Authorization": f"Bearer {revoked_token}"},
        )
        assert answer.status_code == 401, (route, answer.text)
        assert "revoked" in answer.json()["detail"]
    assert _snapshot(session) == before


def test_runner_tokens_get_403_on_admin_routes_and_cannot_triage(
    client: TestClient, session: Session, alert_id: int, runner_token: str
) -> None:
    admin_routes = _routes(client.app, Guard.ADMIN)  # type: ignore[arg-type]
    assert {route.path for route in admin_routes} >= {
        "/api/v1/alerts/{alert_id}/triage",
        "/api/v1/jobs",
        "/api/v1/comparisons",
    }
    before = _snapshot(session)
    for route in admin_routes:
        answer = client.request(
            route.method,
            _url(route, alert_id),
            json=_body(route),
            headers={"Authorization": f"Bearer {runner_token}"},
        )
        assert answer.status_code == 403, (route, answer.text)
    assert _snapshot(session) == before  # the alert's status included


def test_the_same_triage_with_an_admin_token_does_change_the_alert(
    client: TestClient, session: Session, alert_id: int, admin_token: str
) -> None:
    # The control of the test above: the request it refuses is a real one.
    session.expire_all()
    assert session.get(Alert, alert_id).status is AlertStatus.FIXED  # type: ignore[union-attr]
    answer = client.post(
        f"/api/v1/alerts/{alert_id}/triage", json=TRIAGE, headers={"Authorization": f"Bearer {admin_token}"}
    )
    assert answer.status_code == 200, answer.text
    session.expire_all()
    assert session.get(Alert, alert_id).status is AlertStatus.OPEN  # type: ignore[union-attr]


def test_dashboard_forms_ignore_bearer_tokens_without_a_signed_in_session(
    client: TestClient, session: Session, alert_id: int, admin_token: str
) -> None:
    before = _snapshot(session)
    for route in _routes(client.app, Guard.DASHBOARD):  # type: ignore[arg-type]
        answer = client.request(
            route.method,
            _url(route, alert_id),
            data={**TRIAGE, "csrf_token": "forged"},
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        assert answer.status_code == 403, (route, answer.text)
    assert _snapshot(session) == before


def _ping(client: TestClient, delivery: str, signature: str | None) -> Any:
    raw = PING.read_bytes()
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": delivery, "Content-Type": "application/json"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = sign(SECRET, raw) if signature == "ok" else signature
    return client.post(WEBHOOK, content=raw, headers=headers)


def _deliveries(session: Session) -> int:
    session.expire_all()
    return session.scalar(select(func.count()).select_from(GithubDelivery)) or 0


@pytest.mark.parametrize(
    "signature",
    [None, "", "sha256=" + "0" * 64, "sha256=zz", "sha1=" + "0" * 40, sign("not-the-secret", b"{}")],
    ids=["missing", "empty", "zeros", "not-hex", "sha1", "other-secret"],
)
def test_the_webhook_refuses_a_missing_or_wrong_signature(
    client: TestClient, session: Session, signature: str | None
) -> None:
    answer = _ping(client, "delivery-bad", signature)
    assert answer.status_code == 401
    assert _deliveries(session) == 0


def test_a_replayed_webhook_delivery_has_no_second_effect(client: TestClient, session: Session) -> None:
    first = _ping(client, "delivery-1", "ok")
    assert first.json() == {"outcome": "pong"}
    assert _deliveries(session) == 1
    replayed = _ping(client, "delivery-1", "ok")
    assert replayed.status_code == 200
    assert replayed.json() == {"outcome": "already handled"}
    assert _deliveries(session) == 1
    # A bearer token is no substitute for the signature.
    raw = json.dumps({"zen": "x"}).encode()
    answer = client.post(WEBHOOK, content=raw, headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d2"})
    assert answer.status_code == 401


def test_the_schema_declares_the_refusals_of_every_guarded_route(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for route in _routes(client.app, Guard.RUNNER, Guard.ADMIN):  # type: ignore[arg-type]
        responses = paths[route.path][route.method.lower()]["responses"]
        expected = {"401", "403"} if route.guard is Guard.ADMIN else {"401"}
        assert expected <= set(responses), route
        for status in expected:
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorOut"}, route
