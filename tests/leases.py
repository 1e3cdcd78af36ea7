"""Leases in tests with real processes: long enough never to run out by accident, run out on cue.

A lease that runs out while a test runs, because the machine is busy, hands a live runner's job to
another one: a second claim, a second attempt, a test that fails by slowness. So such tests lease
for :data:`UNEXPIRING_LEASE_S`, and a test that means a lease to run out (its runner was killed or
frozen) says when with :func:`run_out_lease`: the tracker's own sweep, run at the moment that lease
ends, a controllable clock instead of a wait.
"""

from __future__ import annotations

import datetime as dt

from tracker import db
from tracker.enums import JobState
from tracker.models import Job
from tracker.workflows import jobs as workflow_jobs

# A day: no test with real processes comes near it.
UNEXPIRING_LEASE_S = 24 * 3600


def run_out_lease(database_url: str, job_id: int) -> None:
    """Sweep leases as the tracker would once job ``job_id``'s lease has run out; only that one may end."""
    engine = db.make_engine(database_url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            job = session.get(Job, job_id)
            assert job is not None
            assert job.state is JobState.LEASED, job.state
            assert job.lease_expires_at is not None
            expired = workflow_jobs.expire(
                session=session, now=job.lease_expires_at + dt.timedelta(seconds=1)
            )
            assert [ended.id for ended in expired] == [job_id], "another live lease would have ended too"
    finally:
        engine.dispose()
