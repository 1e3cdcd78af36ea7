"""Dashboard sign-in with an admin token, the signed session cookie, and CSRF on every form."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tracker.access.tokens import revoke_token
from tracker.settings import Settings
from web.auth import COOKIE, safe_next


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def _sign_in(client: TestClient, token: str) -> None:
    csrf = _csrf(client.get("/login").text)
    response = client.post(
        "/login", data={"token": token, "csrf_token": csrf, "next": "/alerts"}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/alerts"


@pytest.fixture
def alert_id(client: TestClient, runner_token: str) -> int:
    for body in regression_payloads():
        response = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert response.status_code == 201
    [alert] = client.get("/api/v1/alerts").json()
    return int(alert["id"])


def test_admin_token_signs_in_and_the_top_bar_says_who(client: TestClient, admin_token: str) -> None:
    assert "Sign in" in client.get("/").text
    _sign_in(client, admin_token)
    page = client.get("/").text
    assert "test-admin" in page
    assert "Sign out" in page


def test_cookie_is_signed_httponly_lax_and_secure_over_https(client: TestClient, admin_token: str) -> None:
    response = client.get("/login")
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # plain http in tests
    assert admin_token not in cookie
    https = TestClient(client.app, base_url="https://perftrack.example")
    assert "; Secure" in https.get("/login").headers["set-cookie"]


def test_a_tampered_cookie_is_ignored(client: TestClient, admin_token: str) -> None:
    _sign_in(client, admin_token)
    value = client.cookies[COOKIE]
    client.cookies.set(COOKIE, value[:-2] + ("AA" if not value.endswith("AA") else "BB"))
    assert "test-admin" not in client.get("/alerts").text


@pytest.mark.parametrize("which", ["runner", "bogus", "empty"])
def test_runner_and_bad_tokens_are_refused(client: TestClient, runner_token: str, which: str) -> None:
    token = {"runner": runner_token, "bogus": "pt_" + "x" * 43, "empty": ""}[which]
    csrf = _csrf(client.get("/login").text)
    response = client.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
    assert response.status_code in (401, 403)
    assert "not an admin token" in response.text or "unknown or has been revoked" in response.text
    assert "Sign out" not in client.get("/").text


def test_login_itself_needs_the_csrf_field(client: TestClient, admin_token: str) -> None:
    client.get("/login")
    response = client.post("/login", data={"token": admin_token}, follow_redirects=False)
    assert response.status_code == 403
    assert "Sign out" not in client.get("/").text


def test_a_revoked_token_is_signed_out_on_the_next_request(
    client: TestClient, admin_token: str, session: Session
) -> None:
    _sign_in(client, admin_token)
    assert "test-admin" in client.get("/alerts").text
    revoke_token(session=session, name="test-admin")
    session.commit()
    assert "test-admin" not in client.get("/alerts").text
    assert "Sign in" in client.get("/alerts").text


def test_forged_triage_is_refused_and_changes_nothing(
    client: TestClient, admin_token: str, alert_id: int
) -> None:
    url = f"/alerts/{alert_id}/triage"
    body = {"status": "open", "reason": "forged"}
    # No session at all.
    assert client.post(url, data=body).status_code == 403
    _sign_in(client, admin_token)
    # Signed in, but the form lacks the token, or carries a wrong one.
    assert client.post(url, data=body).status_code == 403
    assert client.post(url, data={**body, "csrf_token": "wrong"}).status_code == 403
    detail = client.get(f"/api/v1/alerts/{alert_id}").json()
    assert detail["status"] == "fixed"
    assert [event["reason"] for event in detail["events"]].count("forged") == 0


def test_anonymous_post_with_a_fresh_csrf_is_still_refused(client: TestClient, alert_id: int) -> None:
    csrf = _csrf(client.get("/login").text)  # a genuine token, but nobody signed in
    response = client.post(
        f"/alerts/{alert_id}/triage", data={"status": "open", "reason": "x", "csrf_token": csrf}
    )
    assert response.status_code == 403
    assert client.get(f"/api/v1/alerts/{alert_id}").json()["status"] == "fixed"


def test_logout_needs_the_csrf_field(client: TestClient, admin_token: str) -> None:
    _sign_in(client, admin_token)
    assert client.post("/logout", follow_redirects=False).status_code == 403
    assert "test-admin" in client.get("/").text
    csrf = _csrf(client.get("/alerts").text)
    response = client.post("/logout", data={"csrf_token": csrf}, follow_redirects=False)
    assert response.status_code == 303
    assert "Max-Age=0" in response.headers["set-cookie"]
    assert "test-admin" not in client.get("/").text


def test_signing_in_rotates_the_csrf_secret(client: TestClient, admin_token: str) -> None:
    before = _csrf(client.get("/login").text)
    _sign_in(client, admin_token)
    assert _csrf(client.get("/").text) != before


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/alerts/3", "/alerts/3"),
        ("//evil.example", "/alerts"),
        ("https://evil.example", "/alerts"),
        ("", "/alerts"),
    ],
)
def test_next_stays_on_this_site(target: str, expected: str) -> None:
    assert safe_next(target) == expected


def test_session_secret_is_random_in_development_and_required_in_production() -> None:
    assert Settings().session_secret is not None
    assert Settings().session_secret != Settings().session_secret
    with pytest.raises(ValueError, match="PERFTRACK_SESSION_SECRET"):
        Settings(environment="production", admin_token="x" * 32)
    with pytest.raises(ValueError, match="placeholder"):
        Settings(environment="production", session_secret="changeme")
    good = Settings(environment="production", session_secret="s" * 40)
    assert good.session_secret is not None
