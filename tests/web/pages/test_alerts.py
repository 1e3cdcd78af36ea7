"""The alert and comparison pages, rendered from real data: lists, detail, triage by a signed-in admin."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.views.alert_rows import NOISY_NOTE, output_alert, stored_alert, unconfirmed_suspect
from tracker.enums import AlertConfirmation

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


def _words(html: str) -> str:
    """The page's text as a reader sees it: tags dropped, white space collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_alert_list_shows_the_row_and_escapes_titles(client: TestClient, alert_id: int) -> None:
    html = client.get("/alerts").text
    assert f'data-alert="{alert_id}"' in html
    assert "qwen-image-t2i-1024" in html
    assert "+9.1 % detection's estimate" in _words(html)  # imported: no paired rounds measured it
    assert "263.7 ms → 287.6 ms" in _words(html)
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


def test_an_unconfirmed_suspect_reads_as_such_with_its_paired_estimate(
    client: TestClient, session: Session
) -> None:
    suspect = unconfirmed_suspect(session, 4)
    established = stored_alert(session, 6, confirmation=AlertConfirmation.HELD)
    html = client.get("/alerts").text
    row = _row(html, suspect.id)
    assert 'data-state="unconfirmed"' in row
    assert "-1.37 % [-2.30, -0.45] % 16 paired rounds" in _words(row)
    assert "100.0 ms → 98.6 ms" in _words(row)  # the arms' levels over the rounds
    assert "-3.6" not in row  # detection's first estimate is not what the rounds measured
    assert "too noisy" in _words(row)
    assert NOISY_NOTE in row  # the reason, on the state
    assert "+3.6 % detection's estimate" in _words(_row(html, established.id))
    assert "unconfirmed 1" in _words(html)  # counted apart from the open alerts
    assert f'data-alert="{suspect.id}"' in client.get("/alerts?status=unconfirmed").text
    assert f'data-alert="{suspect.id}"' not in client.get("/alerts?status=open").text


def test_an_alert_page_leads_with_what_paired_rounds_measured(client: TestClient, session: Session) -> None:
    suspect = unconfirmed_suspect(session, 4)
    html = client.get(f"/alerts/{suspect.id}").text
    assert re.search(r'id="alert-figure">-1\.37 %<', html)
    assert re.search(r'id="alert-state">unconfirmed<', html)
    paired = _words(html.split('id="paired-estimate">', 1)[1])
    assert paired.startswith("Paired rounds -1.37 % [-2.30, -0.45] % 100.0 ms → 98.6 ms · 16 rounds")
    assert NOISY_NOTE in paired
    assert "Detection's estimate -3.6 %" in _words(html)
    assert "of at most 16 rounds (up to 32 runs)" in _words(html)  # what the cap costs


def test_an_output_alert_is_listed_in_db(client: TestClient, session: Session) -> None:
    alert = output_alert(session, 4)
    row = _row(client.get("/alerts").text, alert.id)
    assert "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)" in row
    assert " ms" not in _words(row)


def _row(html: str, alert_id: int) -> str:
    """The alerts table's row of one alert."""
    match = re.search(rf'<tr data-alert="{alert_id}".*?</tr>', html, re.S)
    assert match, f"no row for alert {alert_id}"
    return match.group(0)


def test_the_commit_page_lists_its_alerts_as_they_read(client: TestClient, session: Session) -> None:
    suspect = unconfirmed_suspect(session, 4)
    output = output_alert(session, 4, case="wan2.1-t2v-1.3b")  # same first bad commit, another case
    html = client.get(f"/commits/{suspect.first_bad_commit.sha}").text
    rows = {
        int(match.group(1)): _words(match.group(0))
        for match in re.finditer(r"<tr>\s*<td>#(\d+).*?</tr>", html, re.S)
    }
    assert "-1.37 % [-2.30, -0.45] % 100.0 ms → 98.6 ms unconfirmed" in rows[suspect.id]
    assert "-3.6" not in rows[suspect.id]
    assert "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB) open" in rows[output.id]
    assert " ms" not in rows[output.id]
