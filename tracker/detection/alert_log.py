"""Every change to an alert leaves an event: who, when and why (status moves and notes alike)."""

from __future__ import annotations

import datetime as dt

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
