"""The alert and comparison pages, rendered from real data: lists, detail, triage by a signed-in admin."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tests.factories import regression_payloads

HOSTILE = 'Fuse <b>norm</b> & "friends" <script>window.pwned=1</script>'


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


@pytest.fixture
def alert_id(client: TestClient, runner_token: str) -> int:
    for body in regression_payloads(HOSTILE):
        response = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert response.status_code == 201
    [alert] = client.get("/api/v1/alerts").json()
    return int(alert["id"])


@pytest.fixture
def signed_in(client: TestClient, admin_token: str) -> TestClient:
    csrf = _csrf(client.get("/login").text)
    response = client.post("/login", data={"token": admin_token, "csrf_token": csrf}, follow_redirects=False)
    assert response.status_code == 303
    return client


def test_alert_list_shows_the_row_and_escapes_titles(client: TestClient, alert_id: int) -> None:
    html = client.get("/alerts").text
    assert f'data-alert="{alert_id}"' in html
    assert "qwen-image-t2i-1024" in html
    assert "+9.1 %" in html
    assert "263.7 ms → 287.6 ms" in html
    assert "single runs" in html
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html


def test_alert_list_filters_live_in_the_url(client: TestClient, alert_id: int) -> None:
    assert f'data-alert="{alert_id}"' in client.get("/alerts?status=fixed&hardware=H200").text
    assert f'data-alert="{alert_id}"' not in client.get("/alerts?status=open").text
    assert f'data-alert="{alert_id}"' not in client.get("/alerts?direction=improvement").text
    assert client.get("/alerts?status=closed").status_code == 422


def test_alert_page_has_numbers_chart_and_history(client: TestClient, alert_id: int) -> None:
    html = client.get(f"/alerts/{alert_id}").text
    assert "263.7 ms → 287.6 ms" in html
    assert 'id="alert-chart-data"' in html
    assert "/vendor/plotly.min.js" in html
    assert "<script>window.pwned" not in html
    assert 'id="history"' in html
    assert "Sign in</a> with an admin token" in html
    assert f"/alerts/{alert_id}/triage" not in html  # anonymous: no triage forms


def test_unknown_alert_page_is_404(client: TestClient) -> None:
    assert client.get("/alerts/999999").status_code == 404


def test_signed_in_admin_reopens_then_acknowledges(signed_in: TestClient, alert_id: int) -> None:
    client = signed_in
    html = client.get(f"/alerts/{alert_id}").text
    assert 'id="reopen-form"' in html
    csrf = _csrf(html)
    url = f"/alerts/{alert_id}/triage"
    reopened = client.post(url, data={"status": "open", "reason": "still slow", "csrf_token": csrf})
    assert reopened.status_code == 200
    assert "is now open" in reopened.text
    acked = client.post(url, data={"status": "acknowledged", "csrf_token": csrf})
    assert "is now acknowledged" in acked.text
    detail = client.get(f"/api/v1/alerts/{alert_id}").json()
    assert detail["status"] == "acknowledged"
    assert detail["events"][-1]["actor"] == "test-admin"
    assert detail["events"][-2]["reason"] == "still slow"


def test_a_refused_move_says_why_and_changes_nothing(signed_in: TestClient, alert_id: int) -> None:
    csrf = _csrf(signed_in.get(f"/alerts/{alert_id}").text)
    url = f"/alerts/{alert_id}/triage"
    page = signed_in.post(url, data={"status": "acknowledged", "csrf_token": csrf}).text
    assert "Not changed" in page
    page = signed_in.post(url, data={"status": "open", "reason": "  ", "csrf_token": csrf}).text
    assert "Not changed" in page
    assert "reason" in page
    assert signed_in.get(f"/api/v1/alerts/{alert_id}").json()["status"] == "fixed"


def test_comparison_pages_render_empty(client: TestClient) -> None:
    html = client.get("/comparisons").text
    assert "No comparisons yet" in html
    assert client.get("/comparisons/999").status_code == 404
