"""Alert groups: list and filter, read one with its alerts, triage the whole group (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from tracker.detection.groups import get_group, list_groups, triage_group
from tracker.diagnosis.loading import alert_diagnoses
from tracker.models import AlertGroup, utcnow
from tracker.views.alert_display import alert_displays
from web.deps import AdminTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.schemas.errors import ADMIN, BODY, errors
from web.schemas.groups import GroupDetailOut, GroupOut, GroupTriageIn
from web.schemas.params import GroupId

router = APIRouter(prefix="/groups", tags=["groups"])


def group_detail(session: Session, group: AlertGroup) -> GroupDetailOut:
    """A group with each alert's display and diagnosis (read for all its alerts at once)."""
    return GroupDetailOut.of_detail(
        group,
        alert_displays(session=session, alerts=group.alerts),
        alert_diagnoses(session=session, alerts=group.alerts),
    )


@router.get(
    "", response_model=list[GroupOut], responses=errors(404, 422, notes={404: "No such hardware kind"})
)
def read_groups(
    session: SessionDep,
    settings: SettingsDep,
    state: Annotated[
        str | None,
        Query(description="open, acknowledged, fixed, expected or invalid (derived from the alerts)"),
    ] = None,
    model: Annotated[
        str | None, Query(description="a model path or family one of the alerts' cases is of")
    ] = None,
    hardware: Annotated[str | None, Query(description="a hardware kind one of the alerts ran on")] = None,
    limit: Annotated[int, Query(ge=1)] = 200,
) -> list[GroupOut]:
    """Alert groups newest first: culprit or range, state, assignee, link, cases and hardware."""
    groups = list_groups(
        session=session, state=state, model=model, hardware=hardware, limit=min(limit, settings.max_page_size)
    )
    return [GroupOut.of(group) for group in groups]


@router.get(
    "/{group_id}", response_model=GroupDetailOut, responses=errors(404, 422, notes={404: "No such group"})
)
def read_group(group_id: GroupId, session: SessionDep) -> GroupDetailOut:
    """One group with its alerts, their sizes and diagnoses (a merged group names its successor)."""
    return group_detail(session, get_group(session=session, group_id=group_id))


@router.post(
    "/{group_id}/triage",
    response_model=GroupDetailOut,
    responses=errors(
        ADMIN,
        BODY,
        404,
        409,
        notes={404: "No such group", 409: "No alert of the group can make the move, or the group was merged"},
    ),
)
def triage(
    group_id: GroupId, body: GroupTriageIn, session: WriteSessionDep, token: AdminTokenDep
) -> GroupDetailOut:
    """Acknowledge, close (fixed, with the fixing commit; invalid; expected) or reopen every alert of a
    group, assign it, link an issue or pull request."""
    group = triage_group(
        session=session, group_id=group_id, triage=body.triage(), actor=token.name, now=utcnow()
    )
    session.commit()
    return group_detail(session, group)
