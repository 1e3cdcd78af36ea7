"""``/api/v1/groups``: the alert groups, one group read with its alerts, one triage for all of them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.tracker.views.alert_rows import commit, output_alert, stored_alert
from tracker.detection.grouping import place
from tracker.models import Alert, utcnow

GB300_CASE = "qwen-image-2.1-serve-gb300"


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def store_group(session: Session) -> list[Alert]:
    """A culprit merged from pull request 4321 that slowed two cases on H200 and GB300 and changed a
    third case's picture: one group, committed for the app to read."""
    culprit = commit(session, 5)
    culprit.title = "Fuse the norm into the attention kernel (#4321)"
    alerts = [
        stored_alert(session, 5, culprit_commit=culprit),
        stored_alert(session, 5, case=GB300_CASE, hardware="GB300", culprit_commit=culprit),
        output_alert(session, 5, case="wan2.2-t2v-a14b"),
    ]
    for alert in alerts:
        place(session=session, alert=alert, now=utcnow())
    session.commit()
    return alerts


@pytest.fixture
def group_id(session: Session) -> int:
    alerts = store_group(session)
    assert alerts[0].group_id is not None
    return alerts[0].group_id


def test_a_group_lists_its_culprit_pull_request_and_alerts(client: TestClient, group_id: int) -> None:
    [listed] = client.get("/api/v1/groups").json()
    assert listed["id"] == group_id
    assert listed["state"] == "open"
    assert listed["alert_count"] == 3
    assert listed["hardware"] == ["GB300", "H200"]
    assert listed["pull_request"] == {
        "number": 4321,
        "url": "https://github.com/sgl-project/sglang/pull/4321",
    }

    detail = client.get(f"/api/v1/groups/{group_id}").json()
    assert detail["culprit_commit"]["title"].endswith("(#4321)")
    assert sorted(alert["kind"] for alert in detail["alerts"]) == ["output", "speed", "speed"]
    assert {alert["change_pct"] for alert in detail["alerts"] if alert["kind"] == "speed"} == {3.6}
    assert all("diagnosis" in alert for alert in detail["alerts"])
    first = detail["alerts"][0]["id"]
    assert client.get(f"/api/v1/alerts/{first}").json()["group_id"] == group_id


def test_a_missing_group_is_404(client: TestClient) -> None:
    response = client.get("/api/v1/groups/999999")
    assert response.status_code == 404
    assert "no alert group 999999" in response.text


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ({"state": "open"}, 1),
        ({"state": "fixed"}, 0),
        ({"hardware": "GB300"}, 1),
        ({"hardware": "H100"}, 0),
        ({"model": "Qwen/Qwen-Image-2.1"}, 1),
        ({"model": "black-forest-labs/FLUX.1-dev"}, 0),
    ],
)
def test_filters(client: TestClient, group_id: int, params: dict[str, str], count: int) -> None:
    response = client.get("/api/v1/groups", params=params)
    assert response.status_code == 200, response.text
    assert len(response.json()) == count


def test_a_bad_state_filter_names_the_field(client: TestClient, group_id: int) -> None:
    response = client.get("/api/v1/groups", params={"state": "confirming"})
    assert response.status_code == 422
    assert "unknown group state" in response.text


def test_triage_applies_to_every_alert_and_needs_an_admin(
    client: TestClient, group_id: int, runner_token: str, admin_token: str
) -> None:
    url = f"/api/v1/groups/{group_id}/triage"
    body = {
        "status": "acknowledged",
        "assignee": "mei",
        "issue_url": "https://github.com/sgl-project/sglang/issues/9",
    }
    assert client.post(url, json=body).status_code == 401
    assert client.post(url, json=body, headers=_auth(runner_token)).status_code == 403

    done = client.post(url, json=body, headers=_auth(admin_token))
    assert done.status_code == 200, done.text
    assert done.json()["state"] == "acknowledged"
    assert {alert["status"] for alert in done.json()["alerts"]} == {"acknowledged"}
    assert (done.json()["assignee"], done.json()["issue_url"]) == ("mei", body["issue_url"])

    again = client.post(url, json={"status": "acknowledged"}, headers=_auth(admin_token))
    assert again.status_code == 409
    no_reason = client.post(url, json={"status": "fixed"}, headers=_auth(admin_token))
    assert no_reason.status_code == 422
    bad_link = client.post(url, json={"issue_url": "javascript:alert(1)"}, headers=_auth(admin_token))
    assert bad_link.status_code == 422
    assert "issue_url" in bad_link.text
    assert (
        client.post("/api/v1/groups/999999/triage", json=body, headers=_auth(admin_token)).status_code == 404
    )
