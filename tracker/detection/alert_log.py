"""Every change to an alert leaves an event: who, when and why (status moves and notes alike).

A status move that leaves the alert's group reading ``fixed`` (every alert closed, one of them fixed;
by hand, or undone by a later change) tells the group's ``group.fixed`` once, in the same transaction
(:mod:`tracker.detection.group_notices`)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import object_session

from tracker.detection.group_notices import tell_if_fixed
from tracker.enums import AlertStatus
from tracker.models import Alert, AlertEvent

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
    moved = target is not alert.status and not opening
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
    if moved and session is not None:
        tell_if_fixed(session=session, group=alert.group, now=now)
