"""How the API shows an alert: its state and confirmation, and what paired rounds measured, on the
alert list, one alert and the nightly summary; an output alert's figures in dB."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.tracker.views.alert_rows import NOISY_NOTE, T0, output_alert, stored_alert, unconfirmed_suspect
from tracker.enums import AlertConfirmation
from tracker.models import NightlyRun


def _listed(client: TestClient, **params: str) -> dict[int, dict[str, Any]]:
    return {alert["id"]: alert for alert in client.get("/api/v1/alerts", params=params).json()}


def test_an_unconfirmed_suspect_carries_its_paired_estimate_and_interval(
    client: TestClient, session: Session
) -> None:
    suspect = unconfirmed_suspect(session, 4)
    shown = _listed(client, suspects="true")[suspect.id]
    assert (shown["state"], shown["status"], shown["confirmation"]) == ("unconfirmed", "open", "too_noisy")
    assert shown["confirmation_reason"] == NOISY_NOTE
    assert shown["figure"] == {
        "basis": "paired",
        "change_pct": -1.37,
        "ci_low_pct": -2.30,
        "ci_high_pct": -0.45,
        "before": 100.0,
        "after": pytest.approx(98.63),
        "unit": "ms",
        "text": "-1.37 % [-2.30, -0.45] % in 16 paired rounds",
    }
    paired = shown["paired_estimate"]
    assert (paired["change_pct"], paired["ci_low_pct"], paired["ci_high_pct"]) == (-1.37, -2.30, -0.45)
    assert (paired["rounds"], paired["max_rounds"], paired["finished"]) == (16, 16, True)
    assert paired["url"] == f"/comparisons/{paired['comparison_id']}"
    assert (shown["change_pct"], shown["before_ms"], shown["after_ms"]) == (-3.6, 100.0, 96.4)  # detection's
    detail = client.get(f"/api/v1/alerts/{suspect.id}").json()
    assert (detail["state"], detail["figure"], detail["paired_estimate"]) == (
        "unconfirmed",
        shown["figure"],
        paired,
    )
    assert detail["paired_confirmation"]["comparison_id"] == paired["comparison_id"]


def test_a_suspect_is_never_listed_as_open(client: TestClient, session: Session) -> None:
    suspect = unconfirmed_suspect(session, 4)
    confirming = stored_alert(session, 6, confirmation=AlertConfirmation.PENDING)
    established = stored_alert(session, 8, confirmation=AlertConfirmation.HELD)
    assert set(_listed(client, status="open")) == {established.id}
    assert set(_listed(client, status="unconfirmed")) == {suspect.id}
    assert set(_listed(client, status="confirming")) == {confirming.id}
    assert set(_listed(client)) == {established.id}  # suspects only when asked for
    held = _listed(client)[established.id]
    assert (held["state"], held["figure"]["basis"], held["figure"]["change_pct"]) == (
        "open",
        "detection",
        3.6,
    )
    assert held["paired_estimate"] is None
    assert held["confirmation_reason"] == "held over later runs"
    response = client.get("/api/v1/alerts", params={"status": "opened"})
    assert response.status_code == 422
    assert "unconfirmed" in response.text  # the valid states are named


def test_an_output_alert_is_shown_in_db(client: TestClient, session: Session) -> None:
    alert = output_alert(session, 4)
    shown = _listed(client)[alert.id]
    assert shown["kind"] == "output"
    assert (shown["figure"]["basis"], shown["figure"]["unit"]) == ("output", "dB")
    assert (shown["figure"]["before"], shown["figure"]["after"]) == (40.0, 27.1)
    assert shown["figure"]["text"] == shown["output"]["summary"]
    assert "ms" not in shown["figure"]["text"]


def test_the_nightly_summary_shows_each_alert_as_the_alert_list_does(
    client: TestClient, session: Session
) -> None:
    session.add(NightlyRun(schedule="sglang-nightly", fired_at=T0, branch="main", backfilled=[]))
    suspect = unconfirmed_suspect(session, 4)
    output = output_alert(session, 6)
    [schedule] = client.get("/api/v1/nightly").json()
    [run] = schedule["runs"]
    shown = {alert["id"]: alert for alert in run["alerts"]}
    listed = _listed(client, suspects="true")
    for alert_id in (suspect.id, output.id):
        for field in ("state", "confirmation", "confirmation_reason", "figure", "paired_estimate"):
            assert shown[alert_id][field] == listed[alert_id][field], field
    assert shown[suspect.id]["state"] == "unconfirmed"
    assert shown[suspect.id]["change_pct"] == -3.6  # detection's, kept; the figure is the rounds'
    assert shown[output.id]["figure"]["unit"] == "dB"
    page = client.get("/nightly").text
    assert "-1.37 %" in page
    assert "[-2.30, -0.45] %" in page
    assert "unconfirmed" in page
