"""Every change to an alert leaves an event: who, when and why (status moves and notes alike).

An alert that becomes ``fixed`` (by hand, or undone by a later change) is told to the notification
subscriptions that want ``alert.fixed`` (:mod:`tracker.notifications`), in the same transaction."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import object_session

from tracker.enums import AlertStatus, NotificationEvent
from tracker.models import Alert, AlertEvent
from tracker.notifications.events import tell_alert

ACTOR = "perftrack"  # events written by the tracker itself, not by a person


def record(
    alert: Alert,
    *,
    reason: str,
    now: dt.datetime,
    to_status: AlertStatus | None = None,
    actor: str = ACTOR,
    opening: bool = False,
) -> None:
    """Append an event and apply its status (``to_status``; the same status for a note)."""
    target = to_status or alert.status
    fixed_now = target is AlertStatus.FIXED and alert.status is not AlertStatus.FIXED and not opening
    alert.events.append(
        AlertEvent(
            from_status=None if opening else alert.status,
            to_status=target,
            actor=actor,
            reason=reason,
            created_at=now,
        )
    )
    alert.status = target
    alert.updated_at = now
    session = object_session(alert)
    if fixed_now and session is not None:
        tell_alert(session=session, alert=alert, event=NotificationEvent.ALERT_FIXED)
