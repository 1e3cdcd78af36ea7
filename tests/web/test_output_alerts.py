"""Output alerts in the API and on the pages: kind ``output``, the check's PSNR/SSIM, no times."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.detection.test_output_alerts import AFTER, BEFORE, nightly_series
from tests.tracker.output_bench import linear_history


@pytest.fixture
def alert_id(session: Session) -> int:
    """Four nightly commits; the third changes the picture (about 26 dB against 40 dB)."""
    commits = linear_history(4)
    nightly_series(session, commits, list(range(4)), lambda index: AFTER if index >= 2 else BEFORE)
    session.commit()
    return 0


def _output_alert(client: TestClient) -> dict[str, Any]:
    [alert] = [alert for alert in client.get("/api/v1/alerts").json() if alert["kind"] == "output"]
    assert isinstance(alert, dict)
    return alert


def test_the_list_says_kind_output_with_the_check(client: TestClient, alert_id: int) -> None:
    alert = _output_alert(client)
    assert alert["metric"] == "output"
    output = alert["output"]
    assert isinstance(output, dict)
    assert 20 < output["psnr_db"] < 32
    assert output["ssim"] < 0.95
    assert output["tolerance_db"] == 40.0
    assert output["summary"].startswith("output changed: PSNR ")
    assert output["summary"].endswith("(tolerance 40 dB)")
    assert alert["confirmation"] == "not_needed"
    assert alert["culprit_commit"] is not None


def test_the_detail_has_kind_output_and_a_diagnosis_that_says_so_first(
    client: TestClient, alert_id: int
) -> None:
    listed = _output_alert(client)
    detail = client.get(f"/api/v1/alerts/{listed['id']}").json()
    assert detail["kind"] == "output"
    assert detail["output"] == listed["output"]
    assert detail["evidence"]["output_summary"].startswith("output changed (PSNR")
    first = detail["diagnosis"][0]
    assert first["kind"] == "output"
    assert first["summary"].startswith("output changed: PSNR ")
    assert "against the last good commit (tolerance 40 dB)" in first["summary"]


def test_speed_alerts_say_kind_speed(client: TestClient, runner_token: str) -> None:
    for body in regression_payloads():
        response = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert response.status_code == 201
    [alert] = client.get("/api/v1/alerts").json()
    assert alert["kind"] == "speed"
    assert alert["output"] is None


def test_the_pages_show_the_output_change_without_times(client: TestClient, alert_id: int) -> None:
    listed = _output_alert(client)
    html = client.get("/alerts").text
    assert f'data-alert="{listed["id"]}"' in html
    assert "output changed: PSNR " in html
    page = client.get(f"/alerts/{listed['id']}")
    assert page.status_code == 200
    assert "output changed: PSNR " in page.text
    assert "(tolerance 40 dB)" in page.text
    assert " ms → " not in page.text


def test_the_series_chart_marks_the_output_change_as_an_event(client: TestClient, alert_id: int) -> None:
    listed = _output_alert(client)
    chart = client.get("/api/v1/series/qwen-image-t2i-1024/H200/chart").json()
    [event] = [alert for alert in chart["alerts"] if alert["id"] == listed["id"]]
    assert event["kind"] == "output"
    assert event["output_summary"].startswith("output changed: PSNR ")
    page = client.get("/series/qwen-image-t2i-1024/H200")
    assert page.status_code == 200
    assert 'data-kind="output"' in page.text
