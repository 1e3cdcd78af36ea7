"""A server without a scheduler keeps house itself: leases that ran out, series a batch marked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select

from tests.conftest import SUITES
from tests.tracker.queue.test_jobs import enqueue, runner
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind, sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import JobState
from tracker.models import Job, PendingEvaluation, utcnow
from tracker.scheduling.housekeeping import Housekeeper
from tracker.series.pending import mark_pending
from tracker.workflows import jobs as workflow_jobs


@pytest.fixture
def scratch_engine(migrated_db_url: str) -> Iterator[Engine]:
    engine = db.make_engine(migrated_db_url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
    yield engine
    engine.dispose()


def test_a_pass_expires_the_leases_that_ran_out_and_evaluates_marked_series(scratch_engine: Engine) -> None:
    sessions = db.make_session_factory(scratch_engine)
    long_ago = utcnow().replace(microsecond=0) - workflow_jobs.queue.DEFAULT_LEASE * 3
    with db.session_scope(sessions) as session:
        job = enqueue(session)
        agent = runner(session)
        assert workflow_jobs.claim(session=session, runner=agent, now=long_ago) is job
        case = get_current_case(session=session, slug="qwen-image-t2i-1024")
        kind = get_hardware_kind(session=session, name="H200")
        mark_pending(session=session, case_id=case.id, hardware_kind_id=kind.id, now=long_ago)
        job_id = job.id
    chores = Housekeeper(scratch_engine).tick()
    assert chores.expired == 1
    with db.session_scope(sessions) as session:
        again = session.get(Job, job_id)
        assert again is not None
        assert again.state is JobState.QUEUED
        assert [entry.outcome.value for entry in again.attempt_history] == ["lease expired"]
        assert session.scalars(select(PendingEvaluation)).all() == []  # the marked series was evaluated
    assert Housekeeper(scratch_engine).tick() == (0, 0, 0)  # nothing left to do
