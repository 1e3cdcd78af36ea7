"""``/alerts`` and ``/alerts/{id}``: what changed, where, how sure, and its triage."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracker.detection.confirmation import confirmation_of
from tracker.detection.triage import TRANSITIONS, alert_state, get_alert, list_alerts, triage_alert
from tracker.diagnosis.loading import alert_diagnosis
from tracker.enums import AlertState, AlertStatus, Metric
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import Alert, utcnow
from tracker.statistics.confirmation import confirmation_promise
from tracker.views.alert_display import alert_displays
from tracker.views.series import series
from web.deps import DashboardAdminDep, SessionDep, WebSessionDep, WriteSessionDep
from web.errors import redact
from web.pages.templating import templates
from web.schemas.alerts import AlertDetailOut
from web.schemas.params import AlertId

router = APIRouter()

# The triage queue's order: what needs a human first, suspects next, closed alerts last.
STATE_ORDER = (
    AlertState.OPEN,
    AlertState.CONFIRMING,
    AlertState.UNCONFIRMED,
    AlertState.ACKNOWLEDGED,
    AlertState.FIXED,
    AlertState.EXPECTED,
    AlertState.INVALID,
)
CLOSING = (AlertStatus.FIXED, AlertStatus.INVALID, AlertStatus.EXPECTED)
CHART_POINTS_EACH_SIDE = 15


@dataclass(frozen=True)
class Filters:
    """The list's filters, as the URL carries them (empty means any)."""

    status: str = ""
    case: str = ""
    hardware: str = ""
    direction: str = ""

    def active(self) -> bool:
        """Whether any filter narrows the list."""
        return any((self.status, self.case, self.hardware, self.direction))


def age(created_at: dt.datetime, now: dt.datetime) -> str:
    """``3 d``, ``5 h``, ``12 min``: how long an alert has been around."""
    seconds = max(0.0, (now - created_at).total_seconds())
    if seconds >= 2 * 86400:
        return f"{seconds // 86400:.0f} d"
    if seconds >= 3600:
        return f"{seconds // 3600:.0f} h"
    return f"{max(1.0, seconds // 60):.0f} min"


def _rank(alert: Alert) -> tuple[int, float]:
    return STATE_ORDER.index(alert_state(alert)), -alert.created_at.timestamp()


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(
    request: Request,
    session: SessionDep,
    status: str = "",
    case: str = "",
    hardware: str = "",
    direction: str = "",
) -> Response:
    """Every alert, open ones first, filtered by status, case, hardware and direction."""
    filters = Filters(
        status=status.strip(), case=case.strip(), hardware=hardware.strip(), direction=direction
    )
    everything = list_alerts(session=session)
    error = None
    try:
        shown = (
            list_alerts(
                session=session,
                status=filters.status or None,
                case_slug=filters.case or None,
                hardware=filters.hardware or None,
                direction=filters.direction or None,
            )
            if filters.active()
            else everything
        )
    except (InvalidInput, NotFound) as refused:
        shown, error = [], redact(request, str(refused))  # the filter may be a pasted token
    now = utcnow()
    displays = alert_displays(session=session, alerts=shown)
    rows = [(alert, displays[alert.id], age(alert.created_at, now)) for alert in sorted(shown, key=_rank)]
    counts = Counter(alert_state(alert) for alert in everything)
    return templates.TemplateResponse(
        request,
        "alerts.html",
        {
            "title": "Alerts",
            "rows": rows,
            "filters": filters,
            "error": error,
            "counts": counts,
            "states": STATE_ORDER,
            "cases": sorted({alert.case.slug for alert in everything}),
            "hardware_kinds": sorted({alert.hardware_kind.name for alert in everything}),
        },
        status_code=422 if error else 200,
    )


def alert_chart(session: SessionDep, alert: Alert) -> dict[str, Any] | None:
    """The series around the change, for the zoomed chart (None when the series is gone)."""
    try:
        data = series(
            session=session,
            case_slug=alert.case.slug,
            hardware=alert.hardware_kind.name,
            metric=Metric.DENOISE_STEP_MS if alert.metric is Metric.OUTPUT else alert.metric,
            limit=2000,
        )
    except NotFound:
        return None
    points = [point for point in data.points if point.value is not None]
    shas = [point.commit_sha for point in points]
    bad = alert.first_bad_commit.sha
    centre = shas.index(bad) if bad in shas else len(points) - 1
    window = points[max(0, centre - CHART_POINTS_EACH_SIDE) : centre + CHART_POINTS_EACH_SIDE + 1]
    if not window:
        return None

    def sha_of(commit: Any) -> str | None:
        return commit.sha if commit is not None else None

    return {
        "unit": data.unit,
        "points": [
            {
                "sha": point.commit_sha,
                "title": point.commit_title,
                "author": point.commit_author,
                "value": point.value,
                "run": point.run_id,
            }
            for point in window
        ],
        # An output alert's values are dB, not levels of the charted times: no level lines.
        "before": None if alert.metric is Metric.OUTPUT else alert.before_value,
        "after": None if alert.metric is Metric.OUTPUT else alert.after_value,
        "last_good": sha_of(alert.last_good_commit),
        "first_bad": bad,
        "culprit": sha_of(alert.culprit_commit),
        "fixed_by": sha_of(alert.fixed_by_commit),
    }


@router.get("/alerts/{alert_id}", response_class=HTMLResponse)
def alert_page(request: Request, alert_id: AlertId, session: SessionDep, web: WebSessionDep) -> Response:
    """One alert: the numbers, why it changed, the chart around the change, bisection, history, triage."""
    alert = get_alert(session=session, alert_id=alert_id)
    display = alert_displays(session=session, alerts=[alert])[alert.id]
    detail = AlertDetailOut.of(
        alert,
        display,
        alert_diagnosis(session=session, alert=alert),
        confirmation=confirmation_of(session=session, alert=alert),
    )
    allowed = TRANSITIONS[alert.status]
    return templates.TemplateResponse(
        request,
        "alert.html",
        {
            "title": f"Alert {alert.id}: {alert.case.slug} on {alert.hardware_kind.name}",
            "alert": alert,
            "display": display,
            "detail": detail,
            "promise": confirmation_promise(alert.threshold_pct),
            "age": age(alert.created_at, utcnow()),
            "chart": alert_chart(session, alert),
            "can_acknowledge": AlertStatus.ACKNOWLEDGED in allowed,
            "closing": [status.value for status in CLOSING if status in allowed],
            "can_reopen": AlertStatus.OPEN in allowed,
            "flash": web.pop_flash(),
        },
    )


@router.post("/alerts/{alert_id}/triage")
def triage(
    alert_id: AlertId,
    account: DashboardAdminDep,
    session: WriteSessionDep,
    web: WebSessionDep,
    status: Annotated[str, Form(max_length=32)],
    reason: Annotated[str, Form(max_length=4000)] = "",
) -> Response:
    """Move an alert as the signed-in admin; back to the alert with what happened."""
    try:
        moved = triage_alert(
            session=session, alert_id=alert_id, status=status, actor=account.name, reason=reason, now=utcnow()
        )
    except (Conflict, InvalidInput) as refused:
        session.rollback()
        web.flash("error", f"Not changed: {refused}")
    else:
        session.commit()
        web.flash("ok", f"Alert {alert_id} is now {moved.status.value}.")
    return RedirectResponse(f"/alerts/{alert_id}", status_code=303)
