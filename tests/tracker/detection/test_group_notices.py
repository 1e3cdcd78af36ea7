"""An alert group's notifications (tracker/detection/group_notices.py): confirmed, culprit named and
fixed, each once per group however many alerts it holds; regrouping never tells an alert twice; the
body lists the group's alerts and the filters see the union of their scopes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.detection.test_groups import GB300_CASE, NOW, WAN, grouped, spanning
from tests.tracker.views.alert_rows import commit
from tracker.detection.group_notices import tell_group
from tracker.detection.grouping import place
from tracker.detection.groups import GroupTriage, triage_group
from tracker.detection.triage import triage_alert
from tracker.enums import AlertConfirmation, NotificationEvent, NotificationSubject
from tracker.models import Alert, AlertGroup, NotificationOutbox, NotificationSubscription
from tracker.notifications.subscriptions import NewSubscription, create_subscription

pytestmark = pytest.mark.dialect

PAIRED = {"paired_change_pct": 3.4, "paired_ci_pct": [2.9, 3.9]}


def subscribe(session: Session, name: str = "all", **filters: Any) -> NotificationSubscription:
    new = NewSubscription(name=name, url=f"https://hooks.example.org/{name}", **filters)
    return create_subscription(session=session, new=new)


def told(session: Session) -> list[tuple[str, int | None]]:
    """Every queued delivery as (event, group id), oldest first."""
    rows = session.scalars(select(NotificationOutbox).order_by(NotificationOutbox.id))
    return [(row.event.value, row.subject_id) for row in rows]


def group_of(alert: Alert) -> AlertGroup:
    assert alert.group is not None
    return alert.group


def diagnosis(alerts: Sequence[Alert]) -> Mapping[int, str]:
    return {alert.id: f"graph breaks 0 → 12 ({alert.case.slug})" for alert in alerts}


def test_many_alerts_confirmed_and_fixed_together_are_told_once_each(session: Session) -> None:
    subscribe(session)
    cases = {"qwen-image-t2i-1024": "H200", WAN: "H200", GB300_CASE: "GB300"}
    alerts = [
        grouped(session, 5, case=case, hardware=kind, evidence=dict(PAIRED)) for case, kind in cases.items()
    ]
    group = group_of(alerts[0])
    assert {alert.group_id for alert in alerts} == {group.id}

    for alert in alerts:  # the workflow tells the group after each confirmation
        tell_group(session=session, group=alert.group, now=NOW, describe=diagnosis)
    triage_group(
        session=session,
        group_id=group.id,
        triage=GroupTriage(status="fixed", reason="reverted"),
        actor="ada",
        now=NOW,
    )
    triage_alert(session=session, alert_id=alerts[0].id, status="open", actor="ada", reason="back", now=NOW)
    triage_alert(session=session, alert_id=alerts[0].id, status="fixed", actor="ada", reason="again", now=NOW)

    assert told(session) == [("group.confirmed", group.id), ("group.fixed", group.id)]
    assert group.confirmed_at == NOW
    assert group.fixed_at == NOW
    confirmed = session.scalars(select(NotificationOutbox)).first()
    assert confirmed is not None
    assert confirmed.subject_kind is NotificationSubject.GROUP
    assert confirmed.dedupe == f"group:{group.id}:group.confirmed"
    payload = confirmed.payload
    assert payload["path"] == f"/groups/{group.id}"
    assert payload["title"] == f"Confirmed: 3 regressions in group {group.id}"
    assert payload["lines"][0].startswith("between ")
    assert payload["lines"][1] == (
        "`qwen-image-t2i-1024` on H200: denoise_step_ms regression +3.4 %, interval [+2.9, +3.9] % "
        "(95 % one-sided bounds) (100.00 → 103.60 ms); graph breaks 0 → 12 (qwen-image-t2i-1024)"
    )
    assert {item["case"]: item["hardware"] for item in payload["details"]["alerts"]} == cases


def test_an_alert_joining_a_group_told_already_sends_nothing(session: Session) -> None:
    subscribe(session)
    first = grouped(session, 5)
    tell_group(session=session, group=first.group, now=NOW)
    later = NOW + dt.timedelta(hours=3)
    joined = grouped(session, 5, case=WAN)
    assert joined.group is first.group

    assert tell_group(session=session, group=joined.group, now=later) == []
    assert told(session) == [("group.confirmed", group_of(first).id)]
    assert joined.confirmed_at == later  # seen: it is not told again if it moves to another group


def test_regrouping_never_tells_an_alert_twice(session: Session) -> None:
    subscribe(session)
    wide = spanning(session, 2, 8)
    narrower = spanning(session, 4, 8, case=WAN)
    ranged = group_of(wide)
    tell_group(session=session, group=ranged, now=NOW)
    apart = spanning(session, 8, 9, case=GB300_CASE, hardware="GB300")
    tell_group(session=session, group=apart.group, now=NOW)

    # Bisection names commit 3, outside the group's (4, 8]: wide moves alone to a new culprit group.
    wide.culprit_commit = commit(session, 3)
    place(session=session, alert=wide, now=NOW)
    session.flush()
    culprit_group = group_of(wide)
    assert culprit_group is not ranged
    tell_group(session=session, group=culprit_group, now=NOW)
    # Bisection names commit 3 for the other group's alert: that group empties into the culprit's.
    apart.last_good_commit = commit(session, 2)
    apart.culprit_commit = commit(session, 3)
    emptied = group_of(apart)
    place(session=session, alert=apart, now=NOW)
    session.flush()
    assert apart.group is culprit_group
    assert emptied.merged_into_id == culprit_group.id
    tell_group(session=session, group=culprit_group, now=NOW)
    tell_group(session=session, group=narrower.group, now=NOW)

    assert told(session) == [
        ("group.confirmed", ranged.id),
        ("group.confirmed", emptied.id),
        ("group.culprit", culprit_group.id),  # the culprit is news; the confirmation is not
    ]


def test_suspects_and_unrepeatable_imports_are_not_told(session: Session) -> None:
    subscribe(session)
    alert = grouped(session, 5, confirmation=AlertConfirmation.NOT_POSSIBLE)
    assert alert.group is not None
    assert tell_group(session=session, group=alert.group, now=NOW) == []
    assert told(session) == []


@pytest.mark.parametrize(
    ("filters", "wanted"),
    [
        ({"models": [WAN]}, True),  # one of the group's cases
        ({"hardware": ["GB300"]}, True),  # one of its alerts' GPUs
        ({"models": ["flux-t2i"]}, False),
        ({"hardware": ["B200"]}, False),
        ({"repositories": ["sgl-project/sglang"]}, True),
        ({"repositories": ["someone/else"]}, False),
        ({"events": ["group.fixed"]}, False),
    ],
)
def test_the_filters_see_the_union_of_the_group_s_alerts(
    session: Session, filters: dict[str, list[str]], wanted: bool
) -> None:
    subscribe(session, "filtered", **filters)
    alert = grouped(session, 5)
    grouped(session, 5, case=WAN, hardware="GB300")
    repository = group_of(alert).repository
    repository.name = "sgl-project/sglang"

    tell_group(session=session, group=alert.group, now=NOW)

    assert told(session) == ([("group.confirmed", group_of(alert).id)] if wanted else [])


def test_the_old_event_names_are_taken_as_the_group_events(session: Session) -> None:
    subscription = subscribe(session, events=["alert.confirmed", "alert.fixed", "pr.verdict"])
    assert subscription.events == ["group.confirmed", "group.fixed", "pr.verdict"]
    assert NotificationEvent.GROUP_FIXED.value in subscription.events


def test_a_group_left_with_only_fixed_alerts_is_told_fixed_once(session: Session) -> None:
    """An open alert leaves (paired rounds no longer hold it): what the group keeps is all fixed."""
    subscribe(session)
    fixed = grouped(session, 5, evidence=dict(PAIRED))
    still_open = grouped(session, 5, case=WAN, evidence=dict(PAIRED))
    group = group_of(fixed)
    assert still_open.group is group
    tell_group(session=session, group=group, now=NOW)
    triage_alert(session=session, alert_id=fixed.id, status="fixed", actor="ada", reason="reverted", now=NOW)
    assert group.fixed_at is None  # one of its two alerts is still open

    later = NOW + dt.timedelta(hours=1)
    still_open.confirmation = AlertConfirmation.REFUTED
    place(session=session, alert=still_open, now=later)
    session.flush()

    assert still_open.group is None
    assert group.fixed_at == later
    assert told(session) == [("group.confirmed", group.id), ("group.fixed", group.id)]
    place(session=session, alert=fixed, now=later)  # placed again: nothing more to tell
    assert told(session) == [("group.confirmed", group.id), ("group.fixed", group.id)]
