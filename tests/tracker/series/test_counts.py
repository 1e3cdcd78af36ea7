"""Per-series run counts: kept by ingest, rebuilt from ``runs``, backfilled by migration 0008."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.factories import regression_payloads, result_body
from tests.tracker.detection.test_alerts import LIMITS
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.models import SeriesCount
from tracker.series.counts import rebuild_series_counts
from tracker.settings import Settings
from tracker.workflows.results import store_result
from wire import ResultIn

pytestmark = pytest.mark.dialect


def counts(session: Session) -> dict[tuple[int, int], tuple[int, int]]:
    return {
        (row.case_id, row.hardware_kind_id): (row.runs, row.failed)
        for row in session.scalars(select(SeriesCount))
    }


def store(session: Session) -> None:
    for body in regression_payloads():
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    failed = result_body(status="failed", failure_reason="CUDA out of memory", step_times_ms=[])
    failed.pop("denoise_step_mean_ms")
    store_result(session=session, result=ResultIn.model_validate(failed), limits=LIMITS)
    again = regression_payloads()[0]  # a repeat upload is the same run: not counted twice
    store_result(session=session, result=ResultIn.model_validate(again), limits=LIMITS)


def test_ingest_counts_runs_and_failures_once(session: Session) -> None:
    store(session)
    assert list(counts(session).values()) == [(4, 1)]
    kept = counts(session)
    rebuild_series_counts(session=session)
    assert counts(session) == kept


def test_migration_0008_counts_the_runs_stored_before_it(scratch_db_url: str) -> None:
    url = Settings(database_url=scratch_db_url).effective_database_url
    db.upgrade(url)
    engine = db.make_engine(url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
            store(session)
            expected = counts(session)
        db.downgrade(url, "0007")
        db.upgrade(url)
        with db.session_scope(sessions) as session:
            assert counts(session) == expected == {next(iter(expected)): (4, 1)}
    finally:
        engine.dispose()
