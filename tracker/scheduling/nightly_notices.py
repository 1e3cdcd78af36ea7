"""The nightly summary as a notification: once every job of a nightly has ended (or the nightly
could not start), one ``nightly.summary`` event says what ran, what changed, what is still open and
what got fixed (:class:`tracker.scheduling.summary.NightSummary`, which its page shows too).
``nightly_runs.notified_at`` makes each nightly told once, whichever process leads;
it is set also when no subscription wants the event, so nothing is told late when one is added.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Protocol

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.enums import JobState, NotificationEvent
from tracker.models import NightlyRun
from tracker.notifications.events import listening, nightly_notice, notify
from tracker.notifications.outbox import FlushReport, flush_notifications
from tracker.scheduling.summary import night_summary, nightly_run_view
from tracker.settings import Settings

NOTICE_WINDOW = dt.timedelta(days=3)  # older nightlies (before notifications existed) are not told
_RUNNING = frozenset({JobState.QUEUED.value, JobState.LEASED.value})


def notify_finished_nightlies(*, session: Session, now: dt.datetime) -> list[int]:
    """Queue the summary of each nightly that ended since the last call; the ids of those told."""
    runs = session.scalars(
        select(NightlyRun)
        .where(NightlyRun.notified_at.is_(None), NightlyRun.fired_at >= now - NOTICE_WINDOW)
        .order_by(NightlyRun.fired_at, NightlyRun.id)
        .with_for_update(skip_locked=True)
    ).all()
    told = []
    wanted = listening(session=session, event=NotificationEvent.NIGHTLY_SUMMARY)
    for run in runs:
        view = nightly_run_view(session=session, run=run)
        if run.error is None and (not view.jobs_by_state or _RUNNING & view.jobs_by_state.keys()):
            continue  # still measuring (or its jobs are not visible yet)
        if wanted:
            facts = night_summary(session=session, view=view).facts()
            notice = nightly_notice(session=session, run=run, facts=facts)
            notify(session=session, notice=notice)
        run.notified_at = now
        told.append(run.id)
    session.flush()
    return told


class Notifying(Protocol):
    """What :func:`send_notifications` needs of the scheduler service."""

    @property
    def sessions(self) -> sessionmaker[Session]: ...

    @property
    def clock(self) -> Callable[[], dt.datetime]: ...

    @property
    def settings(self) -> Settings | None: ...


def send_notifications(service: Notifying, *, client: httpx.Client | None = None) -> FlushReport:
    """The scheduler's ``notifications`` task: queue the summary of each nightly that ended, then
    send the notification outbox (no transaction open while a receiver is called; ``client``:
    :func:`tracker.notifications.outbox.default_client` when not given)."""
    with db.session_scope(service.sessions) as session:
        notify_finished_nightlies(session=session, now=service.clock())
    public_url = service.settings.public_url if service.settings is not None else None
    with db.session_scope(service.sessions) as session:
        return flush_notifications(session=session, client=client, now=service.clock(), public_url=public_url)
