"""A runner's claim, the lease sweep and a cancellation: the queue moves, then what follows.

The queue (:mod:`tracker.queue.jobs`) reports the jobs that ended; here each is handed to
:func:`tracker.workflows.reactions.after_job_ended`, which tells its comparison or bisection. No
git and no GitHub call happens on these paths: a bisection whose range must be read from git is
left ``queued`` (:mod:`tracker.workflows.bisections`), GitHub writes wait in the outbox.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from tracker.enums import JobState
from tracker.models import Job, Runner, utcnow
from tracker.queue import jobs as queue
from tracker.queue.claims import claim_job
from tracker.settings import CulpritTelling
from tracker.workflows.reactions import after_job_ended


def expire(
    *, session: Session, now: dt.datetime | None = None, telling: CulpritTelling | None = None
) -> list[Job]:
    """Expire the leases that ran out; the jobs that failed with them are reacted to. All expired.
    ``telling``: whether a culprit's pull request may be told (None: not)."""
    now = now or utcnow()
    expired = queue.expire_leases(session=session, now=now)
    for job in expired:
        if job.state is JobState.FAILED:
            after_job_ended(session=session, job=job, now=now, telling=telling)
    return expired


def claim(
    *,
    session: Session,
    runner: Runner,
    lease: dt.timedelta = queue.DEFAULT_LEASE,
    now: dt.datetime | None = None,
) -> Job | None:
    """Lease the next job. Leases that ran out are the scheduler's to expire (:func:`expire`), not a
    claim's: a claim stays one statement however many runners ask at once."""
    return claim_job(session=session, runner=runner, lease=lease, now=now or utcnow())


def cancel(
    *,
    session: Session,
    job_id: int,
    reason: str,
    now: dt.datetime | None = None,
    telling: CulpritTelling | None = None,
) -> Job:
    """Cancel a queued or leased job and tell its comparison or bisection."""
    job = queue.cancel_job(session=session, job_id=job_id, reason=reason, now=now)
    after_job_ended(session=session, job=job, now=job.finished_at or utcnow(), telling=telling)
    return job
