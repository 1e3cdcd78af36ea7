"""0023: an evidence row's reading claim, on both databases: rows from before the revision are
free to read, a claimed row is left to its reader, and a downgrade keeps the rows."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import inspect, select

from tests.conftest import SUITES
from tests.tracker.workflows.test_evidence_reading import pending_row
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.models import EvidenceJob, utcnow
from tracker.workflows.evidence_reading import READ_CLAIM, begin_reading

pytestmark = pytest.mark.dialect


def test_0023_a_row_from_before_is_free_and_a_claim_holds_until_it_runs_out(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
        job_id = pending_row(engine)
        db.downgrade(scratch_db_url, "0022")
        assert "reading_until" not in {
            column["name"] for column in inspect(engine).get_columns("evidence_jobs")
        }
        db.upgrade(scratch_db_url)
        now = utcnow()
        with db.session_scope(sessions) as session:
            assert session.scalar(select(EvidenceJob.reading_until)) is None
            assert begin_reading(session=session, job_id=job_id, now=now) == 1
        with db.session_scope(sessions) as session:
            link = session.get(EvidenceJob, job_id)
            assert link is not None
            assert link.reading_until == now + READ_CLAIM
            assert begin_reading(session=session, job_id=job_id, now=now + dt.timedelta(minutes=1)) is None
            assert begin_reading(session=session, job_id=job_id, now=now + READ_CLAIM) == 2
    finally:
        engine.dispose()
