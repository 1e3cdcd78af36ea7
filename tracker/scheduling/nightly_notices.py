"""The nightly summary as a notification: once every job of a nightly has ended (or the nightly
could not start), one ``nightly.summary`` event says what ran, what changed, what is still open and
what got fixed. ``nightly_runs.notified_at`` makes each nightly told once, whichever process leads;
it is set also when no subscription wants the event, so nothing is told late when one is added.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Protocol

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload, sessionmaker

from tracker import db
from tracker.detection.triage import in_state
from tracker.enums import AlertState, AlertStatus, JobState, NotificationEvent
from tracker.models import Alert, AlertEvent, NightlyRun
from tracker.notifications.events import NightlyFacts, listening, nightly_notice, notify
from tracker.notifications.outbox import FlushReport, flush_notifications
from tracker.scheduling.summary import NightlyRunView, nightly_run_view
from tracker.settings import Settings

NOTICE_WINDOW = dt.timedelta(days=3)  # older nightlies (before notifications existed) are not told
_RUNNING = frozenset({JobState.QUEUED.value, JobState.LEASED.value})
_FIXED_SHOWN = 20


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
            notice = nightly_notice(session=session, run=run, facts=nightly_facts(session, view))
            notify(session=session, notice=notice)
        run.notified_at = now
        told.append(run.id)
    session.flush()
    return told


def nightly_facts(session: Session, view: NightlyRunView) -> NightlyFacts:
    """What one finished nightly's summary says."""
    run = view.run
    open_alerts = session.scalar(select(func.count(Alert.id)).where(*in_state(AlertState.OPEN))) or 0
    return NightlyFacts(
        jobs_by_state=dict(view.jobs_by_state),
        failed=len(view.failed_jobs),
        changed=[_alert_line(alert) for alert in view.alerts],
        open_alerts=open_alerts,
        fixed=_fixed_since(session, _previous_fire(session, run)),
    )


def _previous_fire(session: Session, run: NightlyRun) -> dt.datetime:
    """When the schedule fired before ``run`` (a day before it for the first)."""
    previous = session.scalar(
        select(NightlyRun.fired_at)
        .where(NightlyRun.schedule == run.schedule, NightlyRun.fired_at < run.fired_at)
        .order_by(NightlyRun.fired_at.desc())
        .limit(1)
    )
    return previous or run.fired_at - dt.timedelta(days=1)


def _fixed_since(session: Session, since: dt.datetime) -> list[str]:
    """One line per alert that became fixed since ``since``."""
    alerts = session.scalars(
        select(Alert)
        .join(AlertEvent, AlertEvent.alert_id == Alert.id)
        .where(
            AlertEvent.to_status == AlertStatus.FIXED,
            AlertEvent.from_status != AlertStatus.FIXED,
            AlertEvent.created_at >= since,
            Alert.status == AlertStatus.FIXED,
        )
        .options(selectinload(Alert.case), selectinload(Alert.hardware_kind))
        .order_by(Alert.id)
        .distinct()
        .limit(_FIXED_SHOWN)
    ).all()
    return [_alert_line(alert) for alert in alerts]


def _alert_line(alert: Alert) -> str:
    return (
        f"alert {alert.id}: {alert.direction.value} {alert.change_pct:+.1f} % on "
        f"{alert.case.slug} / {alert.hardware_kind.name}"
    )


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
