"""0025: alert groups, on both databases: the alerts stored before the revision are grouped by the
rule (one culprit, or overlapping ranges), suspects stay out, and a downgrade keeps the alerts."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import SUITES
from tests.tracker.views.alert_rows import commit, stored_alert
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import AlertConfirmation
from tracker.models import Alert, AlertGroup

pytestmark = pytest.mark.dialect

WAN = "wan2.2-t2v-a14b"
GB300_CASE = "qwen-image-2.1-serve-gb300"


def _store(sessions: sessionmaker[Session]) -> dict[str, int]:
    """Two alerts of one culprit, two of overlapping ranges (6, 9] and (7, 8], a third range apart
    and a suspect: stored while groups exist, then ungrouped by the downgrade."""
    with db.session_scope(sessions) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
        culprit = commit(session, 5)
        wide = stored_alert(session, 9, case=WAN)
        wide.last_good_commit = commit(session, 6)
        alerts = {
            "culprit_a": stored_alert(session, 5, culprit_commit=culprit),
            "culprit_b": stored_alert(session, 5, case=GB300_CASE, hardware="GB300", culprit_commit=culprit),
            "wide": wide,
            "narrow": stored_alert(session, 8),
            "apart": stored_alert(session, 12),
            "suspect": stored_alert(session, 12, case=WAN, confirmation=AlertConfirmation.PENDING),
        }
        session.flush()
        return {name: alert.id for name, alert in alerts.items()}


def test_0025_groups_the_alerts_stored_before_it(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        ids = _store(sessions)
        db.downgrade(scratch_db_url, "0024")
        assert "group_id" not in {column["name"] for column in inspect(engine).get_columns("alerts")}
        db.upgrade(scratch_db_url)
        with db.session_scope(sessions) as session:
            group_of = {
                name: session.scalar(select(Alert.group_id).where(Alert.id == id_))
                for name, id_ in ids.items()
            }
            assert group_of["culprit_a"] is not None
            assert group_of["culprit_a"] == group_of["culprit_b"]
            assert group_of["wide"] == group_of["narrow"]
            assert len({group_of["culprit_a"], group_of["wide"], group_of["apart"]}) == 3
            assert group_of["suspect"] is None
            ranged = session.get(AlertGroup, group_of["wide"])
            assert ranged is not None
            assert ranged.culprit_commit_id is None
            assert ranged.last_good_commit is not None
            assert (ranged.last_good_commit.sha, ranged.first_bad_commit.sha) == (
                commit(session, 7).sha,
                commit(session, 8).sha,
            )
            culprit_group = session.get(AlertGroup, group_of["culprit_a"])
            assert culprit_group is not None
            assert culprit_group.culprit_commit_id == commit(session, 5).id
    finally:
        engine.dispose()
