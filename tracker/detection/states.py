"""How an alert and an alert group read to people: states derived from stored statuses, never
stored themselves. Kept apart from triage and groups so that :mod:`tracker.detection.alert_log`
can read a group's state when an alert moves without importing the modules that call it."""

from __future__ import annotations

from tracker.enums import AlertConfirmation, AlertState, AlertStatus
from tracker.models import Alert, AlertGroup

# What an open suspect reads as: paired rounds still deciding, or done without establishing it.
SUSPECT_STATES = {
    AlertConfirmation.PENDING: AlertState.CONFIRMING,
    AlertConfirmation.REFUTED: AlertState.UNCONFIRMED,
    AlertConfirmation.TOO_NOISY: AlertState.UNCONFIRMED,
}

# A group's state is the first of these that any of its alerts is in: open while anything is open.
STATE_PRECEDENCE = (
    AlertState.OPEN,
    AlertState.ACKNOWLEDGED,
    AlertState.FIXED,
    AlertState.EXPECTED,
    AlertState.INVALID,
)


def alert_state(alert: Alert) -> AlertState:
    """The state a reader should see: an open suspect is ``confirming`` or ``unconfirmed``, never ``open``."""
    if alert.status is AlertStatus.OPEN:
        return SUSPECT_STATES.get(alert.confirmation, AlertState.OPEN)
    return AlertState(alert.status.value)


def group_state(group: AlertGroup) -> AlertState:
    """The state a group reads as, derived from its alerts' (see :data:`STATE_PRECEDENCE`)."""
    states = {alert_state(alert) for alert in group.alerts}
    return next((state for state in STATE_PRECEDENCE if state in states), AlertState.OPEN)
