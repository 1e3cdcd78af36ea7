"""The workflows tell an alert group's news (tracker/workflows/group_news.py gives each alert's
diagnosis; tests/tracker/notifications/test_events.py sees it in a body), also where a bisection
whose range git had to list names its culprit at once."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.detection.test_groups import NOW
from tests.tracker.views.alert_rows import stored_alert
from tracker.detection.bisection import start_bisection
from tracker.detection.group_notices import tell_group
from tracker.detection.grouping import place
from tracker.enums import BisectionState, NotificationEvent
from tracker.models import NotificationOutbox
from tracker.notifications.subscriptions import NewSubscription, create_subscription
from tracker.workflows.bisections import QueuedRange, begin
from wire import CommitIn

pytestmark = pytest.mark.dialect


def test_a_culprit_named_once_git_listed_the_range_tells_the_group(session: Session) -> None:
    create_subscription(session=session, new=NewSubscription(name="all", url="https://hooks.example.org/a"))
    alert = stored_alert(session, 5)
    place(session=session, alert=alert, now=NOW)
    tell_group(session=session, group=alert.group, now=NOW)  # confirmed, told
    start_bisection(session=session, alert=alert, now=NOW)  # the range is not stored: queued for git
    assert alert.bisection_state is BisectionState.QUEUED
    good, bad = alert.last_good_commit, alert.first_bad_commit
    assert good is not None
    listed = [CommitIn(sha=bad.sha, parents=[good.sha], title=bad.title, committed_at=bad.committed_at)]

    begin(
        session=session,
        queued=QueuedRange(alert.id, bad.repository, good.sha, bad.sha),
        listed=listed,
        now=NOW + dt.timedelta(minutes=5),
    )

    assert alert.culprit_commit_id == bad.id
    rows = session.scalars(select(NotificationOutbox).order_by(NotificationOutbox.id)).all()
    assert [row.event for row in rows] == [NotificationEvent.GROUP_CONFIRMED, NotificationEvent.GROUP_CULPRIT]
    assert rows[1].payload["lines"][0] == f"culprit: {bad.short_sha} {bad.title}"
