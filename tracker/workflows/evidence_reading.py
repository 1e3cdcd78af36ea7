"""Evidence runs read after the answer: each pending row's trace parsed with no transaction open.

An upload only links its evidence run (:func:`tracker.workflows.evidence.link_evidence_run`);
gunzipping and parsing a trace of several MB inside the upload's write transaction would hold it
(on SQLite, the database's one write lock) for as long. A linked row not read yet is pending
(:func:`pending_evidence`). :func:`summarize_pending` reads each in three steps: its log and trace
are loaded in a short read session (:func:`~tracker.diagnosis.evidence_loading.evidence_input`),
summarised with no session open (:func:`~tracker.diagnosis.evidence_loading.read_evidence`), and
the summary is kept in a short write transaction of its own (:func:`store_evidence_summary`). One
row's failure is logged and never stops the others; a trace nothing can read is stored as read
without a summary, so it is not tried again on every pass. The web layer runs this after
answering an upload; the scheduler and a scheduler-less server's housekeeping run it too, for what
is left.

One reader at a time parses a row: a reading claims it (:func:`begin_reading`, committed before
the trace is parsed) for :data:`READ_CLAIM`, and a follow-up or the scheduler that finds the row
claimed leaves it, so a trace is parsed once, not once per reader (a follow-up and the
housekeeper overlapping parsed one trace three times). The row is still locked and checked when
the summary is kept, so a reading that outlasted its claim is stored once. Each reading is counted
when it claims the row, so a trace that kills its reader (out of memory) is tried
:data:`MAX_READ_ATTEMPTS` times, each after the dead reader's claim ran out, then given up
(:func:`give_up_reading`), instead of taking the server down on every pass.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.diagnosis.evidence_loading import EvidenceInput, evidence_input, read_evidence
from tracker.github.culprits import tell_culprit
from tracker.models import Alert, EvidenceJob, utcnow
from tracker.settings import CulpritTelling

logger = logging.getLogger(__name__)
PENDING_LIMIT = 20  # rows read per pass; the next pass (or follow-up) takes the rest
# Readings a row may begin. One that never ends (its trace killed the reader: out of memory) is
# counted all the same, so such a trace is tried this many times, then given up, not forever.
MAX_READ_ATTEMPTS = 3
# How long a reading holds its row. A trace at the unpack cap is parsed in well under a minute
# (docs/guide.md, "Reading a trace"); a claim outlives a slow reading, and a dead reader's runs out.
READ_CLAIM = dt.timedelta(minutes=10)


def summarize_pending(
    *,
    sessions: sessionmaker[Session],
    read_sessions: sessionmaker[Session] | None = None,
    clock: Callable[[], dt.datetime] = utcnow,
    limit: int = PENDING_LIMIT,
    telling: CulpritTelling | None = None,
) -> int:
    """Read the pending evidence rows, each on its own; returns how many summaries were stored.

    ``read_sessions`` (default ``sessions``): for the look-ups, which on SQLite then never wait for
    the write lock; when nothing is pending the whole pass is one indexed query. ``telling``: whether
    the grown diagnosis is told on a culprit's pull request (None: it is not).
    """
    reading = read_sessions or sessions
    with reading() as session:
        job_ids = pending_evidence(session=session, limit=limit)
    stored = 0
    for job_id in job_ids:
        try:
            stored += _summarize_one(
                sessions=sessions, reading=reading, job_id=job_id, clock=clock, telling=telling
            )
        except Exception:  # a database hiccup on one row: the next pass takes it again
            logger.exception("reading the evidence run of job %d failed", job_id)
    return stored


def _summarize_one(
    *,
    sessions: sessionmaker[Session],
    reading: sessionmaker[Session],
    job_id: int,
    clock: Callable[[], dt.datetime],
    telling: CulpritTelling | None,
) -> bool:
    with db.session_scope(sessions) as session:
        # Counted, and committed, before the trace is parsed: a reader the trace kills still counts.
        attempts = begin_reading(session=session, job_id=job_id, now=clock())
    if attempts is None:
        return False  # read, or being read, by someone else
    if attempts > MAX_READ_ATTEMPTS:
        with db.session_scope(sessions) as session:
            give_up_reading(session=session, job_id=job_id, now=clock())
        return False
    with reading() as session:
        item = evidence_input(session=session, job_id=job_id)
    if item is None:
        return False  # read by someone else meanwhile
    summary = read_evidence(item)  # the slow part: no session open
    with db.session_scope(sessions) as session:
        return store_evidence_summary(
            session=session, item=item, summary=summary, now=clock(), telling=telling
        )


# The row's states, each step in its caller's transaction: pending, a reading begun, read or given up.


def pending_evidence(*, session: Session, limit: int = PENDING_LIMIT) -> list[int]:
    """The job ids of the rows whose run is linked and not read yet, oldest first (one indexed query)."""
    return list(
        session.scalars(
            select(EvidenceJob.job_id)
            .where(EvidenceJob.summarized_at.is_(None), EvidenceJob.run_id.is_not(None))
            .order_by(EvidenceJob.job_id)
            .limit(limit)
        )
    )


def begin_reading(*, session: Session, job_id: int, now: dt.datetime) -> int | None:
    """Claim a pending row for a reading until ``now`` + :data:`READ_CLAIM` and count the reading
    as begun (commit before parsing); the readings so far, or ``None`` when the row is read
    already, gone, or claimed by a reading under way. Past :data:`MAX_READ_ATTEMPTS` the caller
    gives it up (:func:`give_up_reading`) instead of reading it."""
    link = session.get(EvidenceJob, job_id, with_for_update=True)
    if link is None or link.summarized_at is not None or link.run_id is None:
        return None
    if link.reading_until is not None and link.reading_until > now:
        return None
    link.reading_until = now + READ_CLAIM
    link.read_attempts += 1
    session.flush()
    return link.read_attempts


def give_up_reading(*, session: Session, job_id: int, now: dt.datetime) -> bool:
    """Mark a row whose readings never finished as read, without a summary (its side has no
    evidence); ``False`` when it was read meanwhile."""
    link = session.get(EvidenceJob, job_id, with_for_update=True)
    if link is None or link.summarized_at is not None:
        return False
    logger.error(
        "evidence run %s (job %d) given up after %d readings that never finished",
        link.run_id,
        job_id,
        link.read_attempts,
    )
    link.summarized_at = now
    link.reading_until = None
    session.flush()
    return True


def store_evidence_summary(
    *,
    session: Session,
    item: EvidenceInput,
    summary: dict[str, Any] | None,
    now: dt.datetime,
    telling: CulpritTelling | None = None,
) -> bool:
    """Keep what was read from ``item``'s run and mark its row read; ``False`` when the row is gone,
    was read by someone else meanwhile, or links another run now (the row is read locked)."""
    link = session.get(EvidenceJob, item.job_id, with_for_update=True)
    if link is None or link.summarized_at is not None or link.run_id != item.run_id:
        return False
    if summary is not None:  # left unset, the column stays SQL NULL (None would store JSON null)
        link.summary = summary
    link.summarized_at = now
    link.reading_until = None
    session.flush()
    if link.alert_id is not None:  # the diagnosis grew: the culprit's pull request sees it
        alert = session.get(Alert, link.alert_id)
        group = alert.group if alert is not None else None
        tell_culprit(session=session, group=group, telling=telling, now=now)
    return True
