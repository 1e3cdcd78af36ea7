"""What follows a stored run or a job that ended without one.

One place dispatches, so ingest and the job queue stay ignorant of comparisons and alerts:
a comparison's arm advances its comparison; a run on a series (nightly, confirm, bisect, manual,
import) feeds change detection.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from tracker.models import Job, Run


def after_job_run(*, session: Session, job: Job, run: Run, now: dt.datetime) -> None:
    """React to the run a job attempt stored (its job is already done or failed)."""
    del session, job, run, now


def after_job_ended(*, session: Session, job: Job, now: dt.datetime) -> None:
    """React to a job that ended without a run: failed after its last lease expired, or cancelled."""
    del session, job, now
