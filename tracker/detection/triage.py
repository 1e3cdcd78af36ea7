"""Reading and triaging alerts, and sweeping every series for changes."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session, selectinload

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.detection import bisection
from tracker.detection.alert_log import record
from tracker.detection.grouping import SUSPECT_CONFIRMATIONS as SUSPECT_CONFIRMATIONS
from tracker.detection.states import SUSPECT_STATES
from tracker.detection.states import alert_state as alert_state
from tracker.enums import AlertConfirmation, AlertState, AlertStatus, BisectionState, Direction, enum_values
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import Alert, Case, Commit

# Who may move an alert where. Reopening is allowed from every closed state, with a reason.
TRANSITIONS: dict[AlertStatus, frozenset[AlertStatus]] = {
    AlertStatus.OPEN: frozenset(
        {AlertStatus.ACKNOWLEDGED, AlertStatus.FIXED, AlertStatus.INVALID, AlertStatus.EXPECTED}
    ),
    AlertStatus.ACKNOWLEDGED: frozenset(
        {AlertStatus.OPEN, AlertStatus.FIXED, AlertStatus.INVALID, AlertStatus.EXPECTED}
    ),
    AlertStatus.FIXED: frozenset({AlertStatus.OPEN}),
    AlertStatus.INVALID: frozenset({AlertStatus.OPEN}),
    AlertStatus.EXPECTED: frozenset({AlertStatus.OPEN}),
}
CONFIRMATIONS = tuple(enum_values(AlertConfirmation))


def list_alerts(
    *,
    session: Session,
    status: str | None = None,
    case_slug: str | None = None,
    hardware: str | None = None,
    direction: str | None = None,
    confirmation: str | None = None,
    limit: int = 200,
    suspects: bool = True,
) -> list[Alert]:
    """Alerts newest first, filtered; ``status`` is the state :func:`alert_state` gives (``open``
    leaves out suspects, ``confirming`` and ``unconfirmed`` are open suspects).

    ``suspects=False`` leaves out suspects (paired rounds still deciding, refuted, or too noisy
    to tell) unless a ``status`` or ``confirmation`` filter asks for them.
    """
    query = (
        select(Alert)
        .order_by(Alert.created_at.desc(), Alert.id.desc())
        .limit(limit)
        .options(
            selectinload(Alert.case),
            selectinload(Alert.hardware_kind),
            selectinload(Alert.first_bad_commit),
            selectinload(Alert.last_good_commit),
            selectinload(Alert.culprit_commit),
            selectinload(Alert.fixed_by_commit),
        )
    )
    if status is not None:
        query = query.where(*in_state(_state(status)))
    if confirmation is not None:
        if confirmation not in CONFIRMATIONS:
            raise InvalidInput(
                "confirmation", f"unknown confirmation {confirmation!r}; valid: {', '.join(CONFIRMATIONS)}"
            )
        query = query.where(Alert.confirmation == AlertConfirmation(confirmation))
    if not suspects and status is None and confirmation is None:
        query = query.where(Alert.confirmation.not_in(SUSPECT_CONFIRMATIONS))
    if direction is not None:
        if direction not in enum_values(Direction):
            raise InvalidInput(
                "direction", f"unknown direction {direction!r}; valid: {', '.join(enum_values(Direction))}"
            )
        query = query.where(Alert.direction == Direction(direction))
    if case_slug is not None:
        case = get_current_case(session=session, slug=case_slug)
        query = query.join(Case, Case.id == Alert.case_id).where(Case.slug == case.slug)
    if hardware is not None:
        query = query.where(Alert.hardware_kind_id == get_hardware_kind(session=session, name=hardware).id)
    return list(session.scalars(query))


def in_state(state: AlertState) -> tuple[ColumnElement[bool], ...]:
    """The conditions of :func:`alert_state` returning ``state``, for a query."""
    if state is AlertState.OPEN:
        return Alert.status == AlertStatus.OPEN, Alert.confirmation.not_in(SUSPECT_CONFIRMATIONS)
    if state in (AlertState.CONFIRMING, AlertState.UNCONFIRMED):
        suspects = [confirmation for confirmation, shown in SUSPECT_STATES.items() if shown is state]
        return Alert.status == AlertStatus.OPEN, Alert.confirmation.in_(suspects)
    return (Alert.status == AlertStatus(state.value),)


def _state(value: str) -> AlertState:
    try:
        return AlertState(value)
    except ValueError:
        valid = ", ".join(enum_values(AlertState))
        raise InvalidInput("status", f"unknown status {value!r}; valid: {valid}") from None


def _status(value: str) -> AlertStatus:
    try:
        return AlertStatus(value)
    except ValueError:
        valid = ", ".join(enum_values(AlertStatus))
        raise InvalidInput("status", f"unknown status {value!r}; valid: {valid}") from None


def get_alert(*, session: Session, alert_id: int) -> Alert:
    """One alert with its events and bisection steps."""
    alert = session.scalar(
        select(Alert)
        .where(Alert.id == alert_id)
        .options(selectinload(Alert.events), selectinload(Alert.bisection_steps))
    )
    if alert is None:
        raise NotFound(f"no alert {alert_id}")
    return alert


def triage_alert(
    *,
    session: Session,
    alert_id: int,
    status: str,
    actor: str,
    reason: str,
    now: dt.datetime,
    fixed_by: Commit | None = None,
) -> Alert:
    """Move an alert to ``status`` as ``actor`` says why; closing and reopening need a reason.

    ``fixed_by``: the commit that fixed it, with the status ``fixed`` only.
    """
    alert = get_alert(session=session, alert_id=alert_id)
    target = _status(status)
    if fixed_by is not None and target is not AlertStatus.FIXED:
        raise InvalidInput("fixed_by", "a fixing commit goes with the status fixed")
    if target is alert.status:
        raise Conflict(f"alert {alert_id} is already {target.value}")
    if target not in TRANSITIONS[alert.status]:
        allowed = ", ".join(sorted(item.value for item in TRANSITIONS[alert.status]))
        raise Conflict(f"alert {alert_id} is {alert.status.value}; it can move to {allowed}")
    reason = reason.strip()
    if target is not AlertStatus.ACKNOWLEDGED and not reason:
        raise InvalidInput("reason", f"say why the alert is {target.value}")
    if fixed_by is not None:
        alert.fixed_by_commit = fixed_by
    record(alert, reason=reason, now=now, to_status=target, actor=actor)
    session.flush()
    return alert


def request_bisection(*, session: Session, alert_id: int, now: dt.datetime) -> Alert:
    """Start (or restart after it was unavailable) the bisection of an alert by hand.

    A range that must be read from git leaves the alert ``queued`` for
    :mod:`tracker.workflows.bisections`.
    """
    alert = get_alert(session=session, alert_id=alert_id)
    if alert.bisection_state in (BisectionState.RUNNING, BisectionState.FOUND, BisectionState.NOT_NEEDED):
        raise Conflict(f"alert {alert_id} bisection is already {alert.bisection_state.value}")
    alert.bisection_state = None
    bisection.start_bisection(session=session, alert=alert, now=now)
    session.flush()
    return alert
