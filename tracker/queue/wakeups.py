"""Waking the runners that wait for work: a job put in the queue says so once its transaction commits.

A runner's claim may wait (long-poll) instead of asking again every few seconds; what it waits for
is this module's signal, one per hardware kind:

- **In this process**, :func:`job_queued` notes the kind on the session, and the session's commit
  calls every callback registered with :func:`on_job_queued` (never on a rollback).
- **Across processes** (PostgreSQL), :func:`job_queued` also sends ``NOTIFY perftrack_jobs, '<kind
  id>'`` inside the transaction: PostgreSQL delivers it to every listening connection at commit,
  and drops it on rollback. :class:`NotifyListener` is one such connection per server process, on
  a thread of its own, calling the same callbacks.

SQLite has no cross-process signal; a waiter there also re-checks the queue every second or so
(a short poll inside the server), which also covers a notification lost while the listener
reconnects. A spurious wake costs one claim that finds nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from sqlalchemy import event, func, select
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

CHANNEL = "perftrack_jobs"
_KINDS_KEY = "perftrack_queued_kinds"
logger = logging.getLogger(__name__)

Callback = Callable[[int], None]
_callbacks: list[Callback] = []
_callbacks_lock = threading.Lock()


def on_job_queued(callback: Callback) -> Callable[[], None]:
    """Call ``callback(hardware_kind_id)`` whenever a job of that kind is queued; returns the undo."""
    with _callbacks_lock:
        _callbacks.append(callback)

    def remove() -> None:
        with _callbacks_lock:
            if callback in _callbacks:
                _callbacks.remove(callback)

    return remove


def job_queued(*, session: Session, hardware_kind_id: int) -> None:
    """Say that a job of this hardware kind is (back) in the queue, once ``session`` commits."""
    session.info.setdefault(_KINDS_KEY, set()).add(hardware_kind_id)
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        session.execute(select(func.pg_notify(CHANNEL, str(hardware_kind_id))))


def notify_local(hardware_kind_id: int) -> None:
    """Run this process's callbacks for a kind (a notification came in, or a local commit)."""
    with _callbacks_lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback(hardware_kind_id)
        except Exception:  # a waiter's failure must not fail the commit that woke it
            logger.exception("a job-queued callback failed")


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.in_nested_transaction():  # a savepoint released: the jobs are not committed yet
        return
    kinds: set[int] = session.info.pop(_KINDS_KEY, set())
    for kind in sorted(kinds):
        notify_local(kind)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    # A rolled-back savepoint may drop a job noted here: the worst that follows is a spurious wake.
    if not session.in_nested_transaction():
        session.info.pop(_KINDS_KEY, None)


class NotifyListener:
    """One PostgreSQL connection that ``LISTEN``s for queued jobs and wakes this process's waiters.

    It reconnects after losing its connection (waiting up to :attr:`max_backoff_s`); while it is
    away, waiters still find new jobs by their periodic re-check.
    """

    def __init__(self, url: URL, *, max_backoff_s: float = 30.0) -> None:
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.max_backoff_s = max_backoff_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()

    def start(self) -> None:
        """Listen on a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="perftrack-job-listener", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening (returns within about a second)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                self._listen()
                backoff = 0.5
            except psycopg.Error as error:
                self.connected.clear()
                logger.warning("job listener lost its connection (%s); retrying in %.1f s", error, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff_s, backoff * 2)

    def _listen(self) -> None:
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10) as connection:
            connection.execute(f"LISTEN {CHANNEL}")
            self.connected.set()
            while not self._stop.is_set():
                for notice in connection.notifies(timeout=1.0):
                    _dispatch(notice.payload)


def _dispatch(payload: Any) -> None:
    try:
        kind = int(payload)
    except (TypeError, ValueError):
        logger.warning("ignoring a %s notification with payload %r", CHANNEL, payload)
        return
    notify_local(kind)
