"""Deferred detection: uploads only mark their series; one evaluation per series later finds the change."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.detection.test_alerts import LIMITS
from tests.tracker.scheduling.test_service import schedule, scratch_engine, service
from tracker import db
from tracker.models import Alert, PendingEvaluation
from tracker.series.pending import mark_pending, pending_count
from tracker.settings import Settings
from tracker.workflows.batches import store_results
from tracker.workflows.reactions import evaluate_pending_series
from tracker.workflows.results import store_result
from wire import ResultIn

pytestmark = pytest.mark.dialect

__all__ = ["scratch_engine"]
DEFERRED = replace(LIMITS, defer_detection=True)
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def alerts(session: Session) -> list[Alert]:
    return list(session.scalars(select(Alert).order_by(Alert.id)))


def test_uploads_mark_the_series_and_the_evaluation_finds_the_regression(session: Session) -> None:
    baseline, slow, _fixed = regression_payloads()
    for body in (baseline, slow):
        store_result(session=session, result=ResultIn.model_validate(body), limits=DEFERRED)
    assert alerts(session) == []  # nothing evaluated yet
    assert pending_count(session=session) == 1  # two runs, one series, one mark

    touched = evaluate_pending_series(session=session, now=NOW)
    [alert] = alerts(session)
    assert touched == [alert]
    assert alert.first_bad_commit.sha == "4739f2e"
    assert alert.change_pct == pytest.approx(9.06, abs=0.01)
    assert pending_count(session=session) == 0
    assert evaluate_pending_series(session=session, now=NOW) == []  # nothing marked


def test_marking_twice_keeps_one_mark_with_the_first_time(session: Session) -> None:
    body = regression_payloads()[0]
    run = store_result(session=session, result=ResultIn.model_validate(body), limits=DEFERRED, now=NOW).run
    later = NOW + dt.timedelta(minutes=5)
    mark_pending(session=session, case_id=run.case_id, hardware_kind_id=run.hardware_kind_id, now=later)
    [mark] = session.scalars(select(PendingEvaluation)).all()
    assert mark.queued_at == NOW


def test_inline_detection_is_the_default(session: Session) -> None:
    baseline, slow, _fixed = regression_payloads()
    for body in (baseline, slow):
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    assert len(alerts(session)) == 1
    assert pending_count(session=session) == 0


def test_the_api_defers_when_configured(
    client: TestClient, session: Session, settings: Settings, runner_token: str
) -> None:
    settings.detection_deferred = True
    for body in regression_payloads()[:2]:
        answer = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert answer.status_code == 201
    assert alerts(session) == []
    assert pending_count(session=session) == 1
    assert "perftrack_detection_pending_series 1.0" in client.get("/metrics").text
    evaluate_pending_series(session=session, now=NOW)
    assert len(alerts(session)) == 1
    assert "perftrack_detection_pending_series 0.0" in client.get("/metrics").text


def test_the_scheduler_evaluates_the_marked_series(scratch_engine: Engine, tmp_path: Path) -> None:
    sessions = db.make_session_factory(scratch_engine)
    with db.session_scope(sessions) as session:
        for body in regression_payloads()[:2]:
            store_result(session=session, result=ResultIn.model_validate(body), limits=DEFERRED)
    scheduler = service(scratch_engine, tmp_path, schedule())
    assert scheduler.evaluate_pending() == 1  # the alert the two runs make
    with db.session_scope(sessions) as session:
        assert pending_count(session=session) == 0
        assert len(alerts(session)) == 1


def test_the_scheduler_evaluates_what_a_batch_marked_under_inline_detection(
    scratch_engine: Engine, tmp_path: Path
) -> None:
    # Inline detection (the default, LIMITS) evaluates a single upload's series at once; a batch only
    # marks its series, and the scheduler's pending pass (registered whatever the setting) evaluates them.
    sessions = db.make_session_factory(scratch_engine)
    with db.session_scope(sessions) as session:
        results = [ResultIn.model_validate(body) for body in regression_payloads()[:2]]
        store_results(session=session, results=results, limits=LIMITS)
        assert alerts(session) == []
        assert pending_count(session=session) == 1
    scheduler = service(scratch_engine, tmp_path, schedule())
    assert scheduler.evaluate_pending() == 1
    with db.session_scope(sessions) as session:
        assert pending_count(session=session) == 0
        assert len(alerts(session)) == 1
