"""``/groups`` and ``/groups/{id}``: the alerts one commit range moved, side by side, triaged once
(docs/groups.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracker.detection.groups import STATE_PRECEDENCE, GroupTriage, get_group, list_groups, triage_group
from tracker.diagnosis.loading import alert_diagnoses
from tracker.enums import AlertStatus
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import AlertGroup, utcnow
from tracker.views.alert_display import alert_displays
from web.deps import DashboardAdminDep, SessionDep, WebSessionDep, WriteSessionDep
from web.errors import redact
from web.pages.alerts import age, alert_chart
from web.pages.templating import templates
from web.schemas.groups import GroupOut
from web.schemas.params import GroupId

router = APIRouter()


@dataclass(frozen=True)
class Filters:
    """The list's filters, as the URL carries them (empty means any)."""

    state: str = ""
    model: str = ""
    hardware: str = ""

    def active(self) -> bool:
        """Whether any filter narrows the list."""
        return any((self.state, self.model, self.hardware))


@router.get("/groups", response_class=HTMLResponse)
def groups_page(
    request: Request, session: SessionDep, state: str = "", model: str = "", hardware: str = ""
) -> Response:
    """Alert groups newest first, filtered by state, model and hardware."""
    filters = Filters(state=state.strip(), model=model.strip(), hardware=hardware.strip())
    everything = list_groups(session=session)
    error = None
    try:
        shown = (
            list_groups(
                session=session,
                state=filters.state or None,
                model=filters.model or None,
                hardware=filters.hardware or None,
            )
            if filters.active()
            else everything
        )
    except (InvalidInput, NotFound) as refused:
        shown, error = [], redact(request, str(refused))
    now = utcnow()
    alerts = [alert for group in everything for alert in group.alerts]
    return templates.TemplateResponse(
        request,
        "groups.html",
        {
            "title": "Alert groups",
            "rows": [(GroupOut.of(group), age(group.created_at, now)) for group in shown],
            "filters": filters,
            "error": error,
            "states": STATE_PRECEDENCE,
            "models": sorted({alert.case.model for alert in alerts}),
            "hardware_kinds": sorted({alert.hardware_kind.name for alert in alerts}),
        },
        status_code=422 if error else 200,
    )


@router.get("/groups/{group_id}", response_class=HTMLResponse)
def group_page(request: Request, group_id: GroupId, session: SessionDep, web: WebSessionDep) -> Response:
    """One group: culprit or range and its pull request, each alert with its size, diagnosis and chart."""
    group = get_group(session=session, group_id=group_id)
    if group.merged_into_id is not None:
        return RedirectResponse(f"/groups/{group.merged_into_id}", status_code=307)
    displays = alert_displays(session=session, alerts=group.alerts)
    diagnoses = alert_diagnoses(session=session, alerts=group.alerts)
    members = [
        (alert, displays[alert.id], diagnoses.get(alert.id, []), alert_chart(session, alert))
        for alert in group.alerts
    ]
    return templates.TemplateResponse(
        request,
        "group.html",
        {
            "title": f"Group {group.id}: {len(group.alerts)} alerts",
            "group": group,
            "out": GroupOut.of(group),
            "members": members,
            "any_chart": any(chart is not None for *_, chart in members),
            "statuses": [status.value for status in AlertStatus],
            "age": age(group.created_at, utcnow()),
            "flash": web.pop_flash(),
        },
    )


@router.post("/groups/{group_id}/triage")
def triage(
    group_id: GroupId,
    account: DashboardAdminDep,
    session: WriteSessionDep,
    web: WebSessionDep,
    status: Annotated[str, Form(max_length=32)] = "",
    reason: Annotated[str, Form(max_length=4000)] = "",
    fixed_by: Annotated[str, Form(max_length=40)] = "",
    assignee: Annotated[str, Form(max_length=255)] = "",
    issue_url: Annotated[str, Form(max_length=512)] = "",
) -> Response:
    """Triage every alert of a group as the signed-in admin; back to the group with what happened."""
    asked = GroupTriage(
        status=status or None,
        reason=reason,
        fixed_by=fixed_by or None,
        assignee=assignee,
        issue_url=issue_url,
    )
    try:
        group = triage_group(
            session=session, group_id=group_id, triage=asked, actor=account.name, now=utcnow()
        )
    except (Conflict, InvalidInput) as refused:
        session.rollback()
        web.flash("error", f"Not changed: {refused}")
    else:
        session.commit()
        web.flash("ok", f"Group {group_id} is now {_state_of(group)}.")
    return RedirectResponse(f"/groups/{group_id}", status_code=303)


def _state_of(group: AlertGroup) -> str:
    return GroupOut.of(group).state
