"""Alert groups for readers and for triage: list, read one, their derived state, one triage that
applies to every alert of a group through :func:`tracker.detection.triage.triage_alert`
(docs/groups.md). Which group an alert is in: :mod:`tracker.detection.grouping`."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session, selectinload
from sqlalchemy.sql.base import ExecutableOption

from tracker.catalog.cases import get_hardware_kind
from tracker.detection.alert_log import record
from tracker.detection.states import STATE_PRECEDENCE as STATE_PRECEDENCE
from tracker.detection.states import group_state as group_state
from tracker.detection.triage import TRANSITIONS, triage_alert
from tracker.enums import AlertState, AlertStatus, enum_values
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import Alert, AlertGroup, Case, Commit

_SHA = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class GroupTriage:
    """One triage of a whole group; None leaves that part as it is ("" clears a text)."""

    status: str | None = None
    reason: str = ""
    fixed_by: str | None = None
    assignee: str | None = None
    issue_url: str | None = None


def list_groups(
    *,
    session: Session,
    state: str | None = None,
    model: str | None = None,
    hardware: str | None = None,
    limit: int = 200,
) -> list[AlertGroup]:
    """Live groups newest first; ``state`` as :func:`group_state` gives it, ``model`` a model
    path or family one of its alerts' cases is of, ``hardware`` a kind one of its alerts ran on."""
    wanted = _state(state) if state is not None else None
    members = select(Alert.id).where(Alert.group_id == AlertGroup.id)
    if model is not None:
        members = members.join(Case, Case.id == Alert.case_id).where(
            or_(Case.model == model, Case.model_family == model)
        )
    if hardware is not None:
        members = members.where(
            Alert.hardware_kind_id == get_hardware_kind(session=session, name=hardware).id
        )
    query = (
        select(AlertGroup)
        .where(AlertGroup.merged_into_id.is_(None), exists(members))
        .order_by(AlertGroup.created_at.desc(), AlertGroup.id.desc())
        .options(*_loads())
    )
    if wanted is None:
        return list(session.scalars(query.limit(limit)))
    # The state is derived from the alerts: read the groups, then keep those in it.
    return [group for group in session.scalars(query) if group_state(group) is wanted][:limit]


def get_group(*, session: Session, group_id: int) -> AlertGroup:
    """One group with its alerts (a merged group too: ``merged_into_id`` says where it went)."""
    group = session.scalar(select(AlertGroup).where(AlertGroup.id == group_id).options(*_loads()))
    if group is None:
        raise NotFound(f"no alert group {group_id}")
    return group


def triage_group(
    *, session: Session, group_id: int, triage: GroupTriage, actor: str, now: dt.datetime
) -> AlertGroup:
    """Apply one triage to a group: its status to every alert that can make the move (alerts already
    there or that cannot are left as they are), its assignee and issue link to the group."""
    group = get_group(session=session, group_id=group_id)
    if group.merged_into_id is not None:
        raise Conflict(
            f"alert group {group_id} was merged into group {group.merged_into_id}; triage that one"
        )
    assignee = triage.assignee.strip() if triage.assignee is not None else group.assignee
    issue_url = _issue_url(triage.issue_url) if triage.issue_url is not None else group.issue_url
    if triage.status is None and (assignee, issue_url) == (group.assignee, group.issue_url):
        raise InvalidInput("status", "say what to change: a status, an assignee or an issue link")
    fixed_by = _fixing_commit(session, group, triage)
    if triage.status is not None:
        _move_alerts(session, group, triage, fixed_by, actor, now)
    if assignee != group.assignee:
        _assign(group, assignee, actor, now)
    if issue_url != group.issue_url:
        _link(group, issue_url, actor, now)
    group.updated_at = now
    session.flush()
    return group


def _move_alerts(
    session: Session,
    group: AlertGroup,
    triage: GroupTriage,
    fixed_by: Commit | None,
    actor: str,
    now: dt.datetime,
) -> None:
    target = _status(triage.status or "")
    movable = [alert for alert in group.alerts if target in TRANSITIONS[alert.status]]
    if not movable:
        raise Conflict(f"no alert of group {group.id} can move to {target.value}")
    for alert in movable:
        triage_alert(
            session=session,
            alert_id=alert.id,
            status=target.value,
            actor=actor,
            reason=triage.reason,
            now=now,
            fixed_by=fixed_by,
        )


def _fixing_commit(session: Session, group: AlertGroup, triage: GroupTriage) -> Commit | None:
    """The commit a ``fixed`` triage names, in the group's repository (by a 7 to 40 digit sha)."""
    if not triage.fixed_by:
        return None
    if triage.status != AlertStatus.FIXED.value:
        raise InvalidInput("fixed_by", "a fixing commit goes with the status fixed")
    sha = triage.fixed_by.strip().lower()
    if not _SHA.match(sha):
        raise InvalidInput("fixed_by", f"{triage.fixed_by!r} is not a commit sha (7 to 40 hex digits)")
    found = list(
        session.scalars(
            select(Commit)
            .where(Commit.repository_id == group.repository_id, Commit.sha.startswith(sha, autoescape=True))
            .limit(2)
        )
    )
    if len(found) != 1:
        problem = "no commit" if not found else "more than one commit"
        raise InvalidInput("fixed_by", f"{problem} of the group's repository starts with {sha}")
    return found[0]


def _assign(group: AlertGroup, assignee: str, actor: str, now: dt.datetime) -> None:
    group.assignee = assignee
    note = f"group {group.id} assigned to {assignee}" if assignee else f"group {group.id} unassigned"
    for alert in group.alerts:
        record(alert, reason=note, now=now, actor=actor)


def _link(group: AlertGroup, url: str | None, actor: str, now: dt.datetime) -> None:
    group.issue_url = url
    note = f"group {group.id} linked to {url}" if url else f"group {group.id} link removed"
    for alert in group.alerts:
        record(alert, reason=note, now=now, actor=actor)


def _issue_url(value: str) -> str | None:
    """An http(s) address of an issue or pull request; "" removes the link."""
    url = value.strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(char.isspace() for char in url):
        raise InvalidInput("issue_url", "link an issue or pull request by its http(s) address")
    return url


def _status(value: str) -> AlertStatus:
    try:
        return AlertStatus(value)
    except ValueError:
        valid = ", ".join(enum_values(AlertStatus))
        raise InvalidInput("status", f"unknown status {value!r}; valid: {valid}") from None


def _state(value: str) -> AlertState:
    if value not in {state.value for state in STATE_PRECEDENCE}:
        valid = ", ".join(state.value for state in STATE_PRECEDENCE)
        raise InvalidInput("state", f"unknown group state {value!r}; valid: {valid}")
    return AlertState(value)


def _loads() -> tuple[ExecutableOption, ...]:
    return (
        selectinload(AlertGroup.alerts).selectinload(Alert.case),
        selectinload(AlertGroup.alerts).selectinload(Alert.hardware_kind),
        selectinload(AlertGroup.alerts).selectinload(Alert.first_bad_commit),
        selectinload(AlertGroup.alerts).selectinload(Alert.last_good_commit),
        selectinload(AlertGroup.alerts).selectinload(Alert.culprit_commit),
        selectinload(AlertGroup.alerts).selectinload(Alert.fixed_by_commit),
        selectinload(AlertGroup.culprit_commit),
        selectinload(AlertGroup.last_good_commit),
        selectinload(AlertGroup.first_bad_commit),
        selectinload(AlertGroup.repository),
    )
