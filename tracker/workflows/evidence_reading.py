"""Evidence runs read after the answer: each pending row's trace parsed with no transaction open.

An upload only links its evidence run (:func:`tracker.diagnosis.evidence_loading.link_evidence_run`);
gunzipping and parsing a trace of several MB inside the upload's write transaction would hold it
(on SQLite, the database's one write lock) for as long. Here each pending row is read in three
steps: its log and trace are loaded in a short read session, summarised with no session open, and
the summary is kept in a short write transaction of its own. One row's failure is logged and
never stops the others; a trace nothing can read is stored as read without a summary, so it is
not tried again on every pass. The web layer runs this after answering an upload; the scheduler
and a scheduler-less server's housekeeping run it too, for what is left.

Two readers may parse the same row at once (a follow-up and the scheduler): the row is locked
and checked when the summary is kept, so it is stored once and the second reading is dropped.
Each reading is counted before its trace is parsed, so a trace that kills its reader (out of
memory) is tried :data:`~tracker.diagnosis.evidence_loading.MAX_READ_ATTEMPTS` times, then given
up, instead of taking the server down on every pass.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.diagnosis.evidence_loading import (
    MAX_READ_ATTEMPTS,
    PENDING_LIMIT,
    begin_reading,
    evidence_input,
    give_up_reading,
    pending_evidence,
    read_evidence,
    store_evidence_summary,
)
from tracker.models import utcnow

logger = logging.getLogger(__name__)


def summarize_pending(
    *,
    sessions: sessionmaker[Session],
    read_sessions: sessionmaker[Session] | None = None,
    clock: Callable[[], dt.datetime] = utcnow,
    limit: int = PENDING_LIMIT,
) -> int:
    """Read the pending evidence rows, each on its own; returns how many summaries were stored.

    ``read_sessions`` (default ``sessions``): for the look-ups, which on SQLite then never wait for
    the write lock; when nothing is pending the whole pass is one indexed query.
    """
    reading = read_sessions or sessions
    with reading() as session:
        job_ids = pending_evidence(session=session, limit=limit)
    stored = 0
    for job_id in job_ids:
        try:
            stored += _summarize_one(sessions=sessions, reading=reading, job_id=job_id, clock=clock)
        except Exception:  # a database hiccup on one row: the next pass takes it again
            logger.exception("reading the evidence run of job %d failed", job_id)
    return stored


def _summarize_one(
    *,
    sessions: sessionmaker[Session],
    reading: sessionmaker[Session],
    job_id: int,
    clock: Callable[[], dt.datetime],
) -> bool:
    with db.session_scope(sessions) as session:
        # Counted, and committed, before the trace is parsed: a reader the trace kills still counts.
        attempts = begin_reading(session=session, job_id=job_id)
    if attempts is None:
        return False  # read by someone else meanwhile
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
        return store_evidence_summary(session=session, item=item, summary=summary, now=clock())
