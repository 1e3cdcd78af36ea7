"""/api/v1/alerts: list with filters, one alert in detail, triage by admins only, sweeps."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.bench import Bench
from tests.tracker.detection.test_alerts import BASE_MS, SLOW_MS, commit_in
from tracker.enums import JobReason
from tracker.models import Commit, Job


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def alert_id(client: TestClient, runner_token: str) -> int:
    for body in regression_payloads():
        assert client.post("/api/v1/results", json=body, headers=_auth(runner_token)).status_code == 201
    [alert] = client.get("/api/v1/alerts").json()
    return int(alert["id"])


def test_lists_the_imported_regression(client: TestClient, alert_id: int) -> None:
    [alert] = client.get("/api/v1/alerts").json()
    assert alert["case"] == "qwen-image-t2i-1024"
    assert alert["hardware"] == "H200"
    assert alert["direction"] == "regression"
    assert alert["first_bad_commit"]["sha"] == "4739f2e"
    assert alert["last_good_commit"]["sha"] == "669a9bd"
    assert alert["fixed_by_commit"]["sha"] == "9c1d5e2"
    assert alert["before_ms"] == pytest.approx(263.7, abs=0.05)
    assert alert["after_ms"] == pytest.approx(287.6, abs=0.05)
    assert alert["change_pct"] == pytest.approx(9.06, abs=0.01)
    assert alert["status"] == "fixed"
    assert alert["single_run_basis"] is True
    assert alert["confirmation"] == "not_possible"
    assert client.get("/api/v1/alerts", params={"status": "open"}).json() == []
    assert len(client.get("/api/v1/alerts", params={"status": "fixed", "hardware": "H200"}).json()) == 1
    assert client.get("/api/v1/alerts", params={"direction": "improvement"}).json() == []


def test_detail_has_events_and_evidence(client: TestClient, alert_id: int) -> None:
    detail = client.get(f"/api/v1/alerts/{alert_id}").json()
    assert [event["to_status"] for event in detail["events"]] == ["open", "fixed"]
    assert detail["events"][0]["actor"] == "perftrack"
    assert detail["evidence"]["method"] == "single-run"
    assert detail["evidence"]["threshold_source"] == "model"
    assert detail["bisection_steps"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"status": "closed"}, "status"), ({"direction": "up"}, "direction"), ({"case": "nope"}, "case")],
)
def test_bad_filters_name_the_field(client: TestClient, params: dict[str, str], field: str) -> None:
    response = client.get("/api/v1/alerts", params=params)
    assert response.status_code in (404, 422), response.text
    assert field in response.text


def test_unknown_alert_is_404(client: TestClient) -> None:
    assert client.get("/api/v1/alerts/999999").status_code == 404


def test_triage_needs_an_admin_token(
    client: TestClient, alert_id: int, runner_token: str, admin_token: str
) -> None:
    url = f"/api/v1/alerts/{alert_id}/triage"
    body = {"status": "open", "reason": "still slow on GB300"}
    assert client.post(url, json=body).status_code == 401
    assert client.post(url, json=body, headers=_auth("pt_bogus")).status_code == 401
    assert client.post(url, json=body, headers=_auth(runner_token)).status_code == 403
    reopened = client.post(url, json=body, headers=_auth(admin_token))
    assert reopened.status_code == 200, reopened.text
    assert reopened.json()["status"] == "open"
    assert reopened.json()["events"][-1]["reason"] == "still slow on GB300"
    again = client.post(url, json=body, headers=_auth(admin_token))
    assert again.status_code == 409
    missing_reason = client.post(url, json={"status": "invalid"}, headers=_auth(admin_token))
    assert missing_reason.status_code == 422
    assert "reason" in missing_reason.text


def test_sweep_is_idempotent(client: TestClient, alert_id: int, admin_token: str) -> None:
    response = client.post("/api/v1/alerts/sweep", headers=_auth(admin_token))
    assert response.status_code == 200, response.text
    assert response.json()["series"] >= 1
    assert len(client.get("/api/v1/alerts").json()) == 1


def test_manual_bisection_of_an_import_says_why_it_cannot(
    client: TestClient, alert_id: int, admin_token: str
) -> None:
    """The answer comes before git is asked (``queued``); the range's listing follows it and says why."""
    response = client.post(f"/api/v1/alerts/{alert_id}/bisect", headers=_auth(admin_token))
    assert response.status_code == 200, response.text
    assert response.json()["bisection_state"] in ("queued", "not_needed")
    after = client.get(f"/api/v1/alerts/{alert_id}", headers=_auth(admin_token)).json()
    assert after["bisection_state"] in ("unavailable", "not_needed")
    if after["bisection_state"] == "unavailable":
        assert any("no bisection" in event["reason"] for event in after["events"]), after["events"]


def _nightly(session: Session, slow_from: int | None, bad_night: int | None, nights: int = 21) -> None:
    """Nightly runs of commits 0..nights-1 on one simulated runner: a regression from ``slow_from``,
    or one throttled night at ``bad_night`` that its paired rounds do not repeat."""
    bench = Bench(session)
    rng = random.Random(17)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16)
        value = (SLOW_MS if slow_from is not None and index >= slow_from else BASE_MS) * (
            1 + rng.gauss(0, 0.004)
        )
        if index == bad_night and job.reason is JobReason.NIGHTLY:
            return value * 1.09
        return value

    for index in range(nights):
        bench.nightly(commit_in(index))
        bench.drain(measure)


def test_a_confirmed_alert_shows_its_paired_rounds(client: TestClient, session: Session) -> None:
    _nightly(session, slow_from=20, bad_night=None)
    [alert] = client.get("/api/v1/alerts").json()
    assert (alert["confirmation"], alert["state"]) == ("confirmed", "open")
    detail = client.get(f"/api/v1/alerts/{alert['id']}").json()
    paired = detail["paired_confirmation"]
    assert paired["verdict"] == "regression"
    assert paired["ci_low_pct"] > paired["threshold_pct"]
    assert [item["round"] for item in paired["rounds"]] == [1, 2]
    for item in paired["rounds"]:
        assert item["base_ms"] == pytest.approx(BASE_MS, rel=0.02)
        assert item["head_ms"] == pytest.approx(SLOW_MS, rel=0.02)
    comparison = client.get(paired["url"].replace("/comparisons", "/api/v1/comparisons")).json()
    assert (comparison["kind"], comparison["alert_id"]) == ("confirmation", alert["id"])


def test_a_refuted_suspect_is_listed_only_when_suspects_are_asked_for(
    client: TestClient, session: Session
) -> None:
    _nightly(session, slow_from=None, bad_night=20)
    assert client.get("/api/v1/alerts").json() == []
    [suspect] = client.get("/api/v1/alerts", params={"suspects": "true"}).json()
    assert (suspect["confirmation"], suspect["status"]) == ("refuted", "invalid")
    assert [item["id"] for item in client.get("/api/v1/alerts", params={"status": "invalid"}).json()] == [
        suspect["id"]
    ]
    paired = client.get(f"/api/v1/alerts/{suspect['id']}").json()["paired_confirmation"]
    assert paired["verdict"] == "no_change"
    assert paired["ci_high_pct"] < paired["threshold_pct"]
