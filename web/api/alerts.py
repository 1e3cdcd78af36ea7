"""Alerts: list and filter, read one, triage (admin), sweep and bisect on request (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from tracker.detection.confirmation import confirmation_of
from tracker.detection.triage import get_alert, list_alerts, request_bisection, triage_alert
from tracker.diagnosis.loading import alert_diagnoses, alert_diagnosis
from tracker.models import Alert, utcnow
from tracker.views.alert_display import alert_displays
from tracker.workflows.sweep import sweep
from web.deps import AdminTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.followups import FollowUpsDep
from web.schemas.alerts import AlertDetailOut, AlertOut, SweepOut, TriageIn
from web.schemas.errors import ADMIN, BODY, errors
from web.schemas.params import AlertId

router = APIRouter(prefix="/alerts", tags=["alerts"])


def _detail(session: Session, alert: Alert) -> AlertDetailOut:
    return AlertDetailOut.of(
        alert,
        alert_displays(session=session, alerts=[alert])[alert.id],
        alert_diagnosis(session=session, alert=alert),
        confirmation=confirmation_of(session=session, alert=alert),
    )


@router.get("", response_model=list[AlertOut], responses=errors(422))
def read_alerts(
    session: SessionDep,
    settings: SettingsDep,
    status: Annotated[
        str | None,
        Query(
            description="open (suspects aside), confirming, unconfirmed, acknowledged, fixed, invalid, expected"
        ),
    ] = None,
    case: str | None = None,
    hardware: str | None = None,
    direction: Annotated[str | None, Query(description="regression or improvement")] = None,
    confirmation: Annotated[
        str | None,
        Query(description="pending, confirmed, held, refuted, too_noisy, not_possible, not_needed"),
    ] = None,
    suspects: Annotated[
        bool,
        Query(
            description="also list suspects: changes paired rounds are still confirming, refuted, or "
            "left unconfirmed as too noisy (not alerts; a status or confirmation filter includes them too)"
        ),
    ] = False,
    limit: Annotated[int, Query(ge=1)] = 200,
    diagnosis: Annotated[
        bool, Query(description="with each alert's diagnosis (why it changed); false leaves it empty")
    ] = True,
) -> list[AlertOut]:
    """Alerts newest first with case, hardware, commits, before/after, change %, state, confirmation,
    the paired estimate and interval, and diagnosis (read for the whole page at once: a fixed number
    of queries however many alerts)."""
    alerts = list_alerts(
        session=session,
        status=status,
        case_slug=case,
        hardware=hardware,
        direction=direction,
        confirmation=confirmation,
        limit=min(limit, settings.max_page_size),
        suspects=suspects,
    )
    diagnoses = alert_diagnoses(session=session, alerts=alerts) if diagnosis else {}
    displays = alert_displays(session=session, alerts=alerts)
    return [AlertOut.of(alert, displays[alert.id], diagnoses.get(alert.id, ())) for alert in alerts]


@router.get(
    "/{alert_id}", response_model=AlertDetailOut, responses=errors(404, 422, notes={404: "No such alert"})
)
def read_alert(alert_id: AlertId, session: SessionDep) -> AlertDetailOut:
    """One alert with its events, bisection steps, evidence and diagnosis (why it changed)."""
    return _detail(session, get_alert(session=session, alert_id=alert_id))


@router.post(
    "/{alert_id}/triage",
    response_model=AlertDetailOut,
    responses=errors(
        ADMIN, BODY, 404, 409, notes={404: "No such alert", 409: "Not a move the alert's status allows"}
    ),
)
def triage(
    alert_id: AlertId, body: TriageIn, session: WriteSessionDep, token: AdminTokenDep
) -> AlertDetailOut:
    """Acknowledge, close (fixed, invalid, expected) or reopen an alert, saying why."""
    alert = triage_alert(
        session=session,
        alert_id=alert_id,
        status=body.status,
        actor=token.name,
        reason=body.reason,
        now=utcnow(),
    )
    session.commit()
    return _detail(session, alert)


@router.post(
    "/{alert_id}/bisect",
    response_model=AlertDetailOut,
    responses=errors(ADMIN, 404, 409, 422, notes={404: "No such alert"}),
)
def bisect(
    alert_id: AlertId, session: WriteSessionDep, follow_ups: FollowUpsDep, _t: AdminTokenDep
) -> AlertDetailOut:
    """Start the bisection of an alert by hand (e.g. after the repository became reachable).

    A range that must be read from git is ``queued`` in the answer and listed right after it.
    """
    alert = request_bisection(session=session, alert_id=alert_id, now=utcnow())
    session.commit()
    follow_ups.start_bisections()
    return _detail(session, alert)


@router.post("/sweep", response_model=SweepOut, responses=errors(ADMIN))
def run_sweep(
    session: WriteSessionDep, follow_ups: FollowUpsDep, settings: SettingsDep, _t: AdminTokenDep
) -> SweepOut:
    """Evaluate every series now; returns the alerts created or changed."""
    report = sweep(session=session, now=utcnow(), telling=settings.culprit_telling())
    session.commit()
    follow_ups.start_bisections()
    return SweepOut.of(report, alert_displays(session=session, alerts=report.alerts_touched))
