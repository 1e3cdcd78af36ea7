"""0028: the alert events renamed as group events and each group's "told" times, on both databases:
a downgrade maps the stored names back and an upgrade forward, and the upgrade counts the groups
stored before it as told (confirmed, culprit named, fixed), so it sends nothing about them."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa
from sqlalchemy import inspect
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import SUITES
from tests.tracker.views.alert_rows import commit, stored_alert
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.detection.group_notices import tell_group
from tracker.detection.grouping import place
from tracker.enums import AlertConfirmation, AlertStatus
from tracker.notifications.subscriptions import NewSubscription, create_subscription

pytestmark = pytest.mark.dialect

NOW = dt.datetime(2026, 4, 5, tzinfo=dt.UTC)
WAN = "wan2.2-t2v-a14b"


def _store(sessions: sessionmaker[Session]) -> dict[str, int]:
    """A subscription, an open group told confirmed, a culprit group and a fixed group (both never
    told), and a suspect; the ids of the alerts."""
    with db.session_scope(sessions) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
        create_subscription(
            session=session,
            new=NewSubscription(name="team", url="https://hooks.example.org/x", events=["group.confirmed"]),
        )
        alerts = {
            "open": stored_alert(session, 3),
            "culprit": stored_alert(session, 5, culprit_commit=commit(session, 5)),
            "fixed": stored_alert(session, 8, case=WAN, status=AlertStatus.FIXED),
            "suspect": stored_alert(session, 12, confirmation=AlertConfirmation.PENDING),
        }
        for alert in alerts.values():
            place(session=session, alert=alert, now=NOW)
        session.flush()
        tell_group(session=session, group=alerts["open"].group, now=NOW)
        return {name: alert.id for name, alert in alerts.items()}


def _columns(engine: sa.Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}


def _stored_events(engine: sa.Engine) -> tuple[list[str], list[str]]:
    with engine.connect() as connection:
        [wanted] = connection.execute(sa.text("SELECT events FROM notification_subscriptions")).scalars()
        queued = list(connection.execute(sa.text("SELECT event FROM notification_outbox")).scalars())
    return list(wanted if isinstance(wanted, list) else json.loads(wanted)), queued


def test_0028_renames_the_stored_events_and_counts_the_groups_before_it_as_told(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        ids = _store(sessions)
        assert _stored_events(engine) == (["group.confirmed"], ["group.confirmed"])

        db.downgrade(scratch_db_url, "0027")
        assert _stored_events(engine) == (["alert.confirmed"], ["alert.confirmed"])
        assert "fixed_at" not in _columns(engine, "alert_groups")
        assert "confirmed_at" not in _columns(engine, "alerts")
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as connection:  # not a name before 0028
            connection.execute(sa.text("UPDATE notification_outbox SET event = 'group.fixed'"))

        db.upgrade(scratch_db_url)
        assert _stored_events(engine) == (["group.confirmed"], ["group.confirmed"])
        with engine.connect() as connection:
            told = {
                name: connection.execute(
                    sa.text(
                        "SELECT g.confirmed_at IS NOT NULL, g.culprit_named_at IS NOT NULL, "
                        "g.fixed_at IS NOT NULL, a.confirmed_at IS NOT NULL FROM alerts a "
                        "LEFT JOIN alert_groups g ON g.id = a.group_id WHERE a.id = :id"
                    ),
                    {"id": id_},
                ).one()
                for name, id_ in ids.items()
            }
        assert tuple(told["open"]) == (True, False, False, True)
        assert tuple(told["culprit"]) == (True, True, False, True)
        assert tuple(told["fixed"]) == (True, False, True, True)
        assert tuple(told["suspect"]) == (False, False, False, False)  # in no group, never seen confirmed
    finally:
        engine.dispose()
