"""Housekeeping for a server that runs no scheduler: leases that ran out, series marked by uploads,
evidence runs left to read.

A claim is one statement (:func:`tracker.queue.claims.claim_job`), a batch import only marks
its series (:mod:`tracker.series.pending`) and an upload only links an evidence run (its trace is
read after the answer, :mod:`tracker.workflows.evidence_reading`): expiring leases, evaluating
marked series and reading what a follow-up left are the scheduler leader's
(:class:`tracker.scheduling.service.SchedulerService`). A server started
without its scheduler (``PERFTRACK_SCHEDULER_ENABLED`` unset, perhaps with a standalone
``perftrack scheduler`` elsewhere, perhaps with none) runs this housekeeper instead, so a lease
never outlives its runner and a batch's alerts appear because no scheduler was deployed. Several
processes doing it at once is safe: expired jobs and marks are taken with ``FOR UPDATE SKIP
LOCKED`` (SQLite: one writer at a time).
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

from sqlalchemy import Engine

from tracker import db
from tracker.models import utcnow
from tracker.settings import CulpritTelling
from tracker.vcs.history import GitHistory
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.bisections import start_queued
from tracker.workflows.evidence_reading import summarize_pending
from tracker.workflows.reactions import evaluate_pending_series

logger = logging.getLogger(__name__)
INTERVAL_S = 5.0  # a marked series or an expired lease waits at most about this long


class Chores(NamedTuple):
    """What one pass did."""

    expired: int  # leases expired
    touched: int  # alerts touched by the marked series
    summarized: int  # evidence runs read


class Housekeeper:
    """Every ``interval_s`` seconds, on a daemon thread: expire leases, evaluate marked series, read
    evidence runs."""

    def __init__(
        self,
        engine: Engine,
        *,
        interval_s: float = INTERVAL_S,
        history: GitHistory | None = None,
        telling: CulpritTelling | None = None,
    ) -> None:
        self.sessions = db.make_session_factory(engine)
        self.read_sessions = db.make_session_factory(engine, write=False)
        self.interval_s = interval_s
        self.history = history
        self.telling = telling  # whether a culprit's pull request may be told (None: not)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start (returns at once)."""
        self._thread = threading.Thread(target=self._run, name="perftrack-housekeeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the pass under way."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def tick(self) -> Chores:
        """One pass. Bisections it queued start after it (git)."""
        with db.session_scope(self.sessions) as session:
            expired = workflow_jobs.expire(session=session, telling=self.telling)
        with db.session_scope(self.sessions) as session:
            touched = evaluate_pending_series(session=session, now=utcnow(), telling=self.telling)
        if (expired or touched) and self.history is not None:
            start_queued(sessions=self.sessions, history=self.history)
        summarized = summarize_pending(
            sessions=self.sessions, read_sessions=self.read_sessions, telling=self.telling
        )
        return Chores(len(expired), len(touched), summarized)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception:  # the next pass tries again; a crash here would end it for good
                logger.exception("housekeeping (lease expiry, marked series, evidence runs) failed")
