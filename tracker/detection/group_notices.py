"""An alert group's notifications: ``group.confirmed``, ``group.culprit`` and ``group.fixed``, each
sent at most once per group (docs/notifications.md, "Alert groups: once per group").

Each event hangs on a column set once when the event happens, whoever listens then, so a
subscription added later never hears of old groups and a second pass sends nothing:

- ``alert_groups.confirmed_at``: the group first holds a confirmed alert that no group had shown
  before (``alerts.confirmed_at`` is NULL). An alert that joins a group told already is marked seen
  without a message ("group grew" is never sent: the group page and the nightly summary show it), so
  regrouping (a range group becoming its culprit's, an alert moving to the culprit's group, groups
  merging) never tells an alert twice.
- ``alert_groups.culprit_named_at``: bisection named the group's culprit.
- ``alert_groups.fixed_at``: the group's derived state became ``fixed`` (checked whenever one of its
  alerts changes status, :func:`tell_if_fixed`); reopened and fixed again, it is not told again.

:func:`tell_group` is called by the workflow that confirmed an alert or named its culprit, with the
diagnosis each alert's line ends with (diagnoses are read above this layer); a fixed group's lines
name the commit that fixed each alert instead.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from tracker.detection.states import group_state
from tracker.enums import AlertConfirmation, AlertState, Metric, NotificationEvent, NotificationSubject
from tracker.models import Alert, AlertGroup, NotificationOutbox
from tracker.notifications.events import Notice, Scope, case_scope, listening, notify
from tracker.vcs.pulls import pull_request_of

# Alerts a group notice tells: established by paired rounds, held over several imported runs, or a
# changed output (deterministic, never confirmed). Imported changes that could not be re-run and
# suspects are not told.
TOLD_CONFIRMATIONS = frozenset(
    {AlertConfirmation.CONFIRMED, AlertConfirmation.HELD, AlertConfirmation.NOT_NEEDED}
)
MAX_LINES = 20  # alerts listed in a notice's lines (the details list them all)

# Per alert id, the short text its line ends with (a diagnosis's first finding).
Describe = Callable[[Sequence[Alert]], Mapping[int, str]]


def told_alerts(group: AlertGroup) -> list[Alert]:
    """The alerts of a live group that its notices tell about."""
    if group.merged_into_id is not None:
        return []
    return [alert for alert in group.alerts if alert.confirmation in TOLD_CONFIRMATIONS]


def due_events(group: AlertGroup) -> tuple[NotificationEvent, ...]:
    """The events a group has not told yet and now should: confirmed, then culprit."""
    alerts = told_alerts(group)
    if not alerts:
        return ()
    due = []
    if group.confirmed_at is None and any(alert.confirmed_at is None for alert in alerts):
        due.append(NotificationEvent.GROUP_CONFIRMED)
    if group.culprit_commit is not None and group.culprit_named_at is None:
        due.append(NotificationEvent.GROUP_CULPRIT)
    return tuple(due)


def tell_group(
    *, session: Session, group: AlertGroup | None, now: dt.datetime, describe: Describe | None = None
) -> list[NotificationOutbox]:
    """Queue what the group has not told yet (confirmed, culprit named) and mark it told; every
    confirmed alert of the group is marked seen. ``describe`` gives each alert's diagnosis."""
    if group is None:
        return []
    events = due_events(group)
    alerts = told_alerts(group)
    for alert in alerts:
        alert.confirmed_at = alert.confirmed_at or now
    queued: list[NotificationOutbox] = []
    notes: Mapping[int, str] | None = None
    for event in events:
        if event is NotificationEvent.GROUP_CONFIRMED:
            group.confirmed_at = now
        else:
            group.culprit_named_at = now
        if not listening(session=session, event=event):
            continue
        if notes is None:
            notes = describe(alerts) if describe is not None else {}
        queued += notify(
            session=session, notice=group_notice(session=session, group=group, event=event, notes=notes)
        )
    return queued


def tell_if_fixed(
    *, session: Session, group: AlertGroup | None, now: dt.datetime
) -> list[NotificationOutbox]:
    """Queue ``group.fixed`` the first time the group's derived state is ``fixed``."""
    if group is None or group.fixed_at is not None or group.merged_into_id is not None:
        return []
    if not group.alerts or group_state(group) is not AlertState.FIXED:
        return []
    group.fixed_at = now
    if not listening(session=session, event=NotificationEvent.GROUP_FIXED):
        return []
    notes = {
        alert.id: f"fixed by {alert.fixed_by_commit.short_sha} {alert.fixed_by_commit.title}"
        for alert in group.alerts
        if alert.fixed_by_commit is not None
    }
    notice = group_notice(session=session, group=group, event=NotificationEvent.GROUP_FIXED, notes=notes)
    return notify(session=session, notice=notice)


def group_notice(
    *, session: Session, group: AlertGroup, event: NotificationEvent, notes: Mapping[int, str]
) -> Notice:
    """The notice of one group event: what the group is (culprit or range), then one line per alert
    (case, hardware, size with its interval, the note), linked to the group's page."""
    alerts = told_alerts(group) if event is not NotificationEvent.GROUP_FIXED else list(group.alerts)
    culprit, pull = group.culprit_commit, None
    if culprit is not None:
        pull = pull_request_of(culprit)
        origin = f"culprit: {culprit.short_sha} {culprit.title}"
    else:
        low = group.last_good_commit.short_sha if group.last_good_commit is not None else "the start"
        origin = f"between {low} and {group.first_bad_commit.short_sha} {group.first_bad_commit.title}"
    lines = [origin, *(_line(alert, notes.get(alert.id)) for alert in alerts[:MAX_LINES])]
    if len(alerts) > MAX_LINES:
        lines.append(f"… and {len(alerts) - MAX_LINES} more on the group's page")
    scope = case_scope(
        session, [alert.case for alert in alerts], [alert.hardware_kind.name for alert in alerts]
    )
    return Notice(
        event=event,
        subject_kind=NotificationSubject.GROUP,
        subject_id=group.id,
        title=_title(group, event, alerts),
        lines=tuple(lines),
        path=f"/groups/{group.id}",
        details={
            "group_id": group.id,
            "repository": group.repository.name,
            "state": group_state(group).value,
            "culprit": culprit.sha if culprit is not None else None,
            "pull_request": {"number": pull.number, "url": pull.url} if pull is not None else None,
            "last_good_commit": group.last_good_commit.sha if group.last_good_commit is not None else None,
            "first_bad_commit": group.first_bad_commit.sha,
            "alerts": [_alert_details(alert, notes.get(alert.id)) for alert in alerts],
        },
        scope=Scope(models=scope.models, hardware=scope.hardware, repository=group.repository.name),
        dedupe=f"group:{group.id}:{event.value}",
    )


def _title(group: AlertGroup, event: NotificationEvent, alerts: Sequence[Alert]) -> str:
    directions = {alert.direction.value for alert in alerts}
    moved = _count(len(alerts), directions.pop() if len(directions) == 1 else "change")
    if event is NotificationEvent.GROUP_FIXED:
        return f"Fixed: group {group.id} ({moved})"
    if event is NotificationEvent.GROUP_CULPRIT and group.culprit_commit is not None:
        culprit = group.culprit_commit
        return f"Culprit found for group {group.id} ({moved}): {culprit.short_sha} {culprit.title}"
    return f"Confirmed: {moved} in group {group.id}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _line(alert: Alert, note: str | None) -> str:
    where = f"`{alert.case.slug}` on {alert.hardware_kind.name}"
    return f"{where}: {alert.metric.value} {alert.direction.value} {size(alert)}" + (
        f"; {note}" if note else ""
    )


def size(alert: Alert) -> str:
    """How much the alert moved: the paired estimate and its interval when paired rounds measured it
    (a 90 % two-sided interval, so each end is a 95 % one-sided bound), else detection's estimate;
    an output change as its check says."""
    if alert.metric is Metric.OUTPUT:
        summary = alert.evidence.get("output_summary")
        return (
            str(summary)
            if summary
            else f"PSNR {alert.after_value:.1f} dB (tolerance {alert.before_value:.1f} dB)"
        )
    change, ci = paired(alert)
    unit = "MB" if alert.metric is Metric.PEAK_MEMORY_MB else "ms"
    interval = f", interval [{ci[0]:+.1f}, {ci[1]:+.1f}] % (95 % one-sided bounds)" if ci is not None else ""
    return f"{change:+.1f} %{interval} ({alert.before_value:.2f} → {alert.after_value:.2f} {unit})"


def paired(alert: Alert) -> tuple[float, tuple[float, float] | None]:
    """The paired rounds' estimate and interval, else detection's estimate and no interval."""
    change = alert.evidence.get("paired_change_pct")
    ci = alert.evidence.get("paired_ci_pct")
    interval = None
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(bound, int | float) for bound in ci):
        interval = (float(ci[0]), float(ci[1]))
    return (float(change) if isinstance(change, int | float) else alert.change_pct), interval


def _alert_details(alert: Alert, note: str | None) -> dict[str, Any]:
    change, ci = paired(alert)
    return {
        "alert_id": alert.id,
        "case": alert.case.slug,
        "model": alert.case.model,
        "hardware": alert.hardware_kind.name,
        "metric": alert.metric.value,
        "direction": alert.direction.value,
        "change_pct": change,
        "ci_pct": list(ci) if ci is not None else None,
        "before": alert.before_value,
        "after": alert.after_value,
        "status": alert.status.value,
        "note": note,
        "fixed_by": alert.fixed_by_commit.sha if alert.fixed_by_commit is not None else None,
    }
