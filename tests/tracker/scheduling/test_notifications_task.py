"""The scheduler's ``notifications`` task: a finished nightly's summary queued and sent to a local
receiver in transactions of their own, once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from tests.tracker.bench import sessions_beside
from tests.tracker.notifications.receiver import Receiver
from tests.tracker.notifications.test_events import subscribe
from tracker.models import NightlyRun
from tracker.scheduling.nightly_notices import send_notifications
from tracker.settings import Settings

FIRED = dt.datetime(2026, 6, 1, 2, tzinfo=dt.UTC)


@dataclass
class Service:
    """What the task reads of the scheduler service."""

    sessions: sessionmaker[Session]
    clock: Callable[[], dt.datetime]
    settings: Settings | None


def test_the_task_tells_a_finished_nightly_once_with_a_link(session: Session, settings: Settings) -> None:
    subscribe(session, events=["nightly.summary"])
    session.add(
        NightlyRun(schedule="nightly", fired_at=FIRED, branch="main", error="no commit", backfilled=[])
    )
    session.flush()
    service = Service(
        sessions_beside(session),
        lambda: FIRED + dt.timedelta(hours=1),
        settings.model_copy(update={"public_url": "https://perf.example.org"}),
    )
    receiver = Receiver()
    assert send_notifications(service, client=receiver.client()).sent == 1
    assert send_notifications(service, client=receiver.client()).sent == 0
    [body] = receiver.bodies()
    assert body["event"] == "nightly.summary"
    run_id = session.scalars(select(NightlyRun.id)).one()
    assert body["url"] == f"https://perf.example.org/nights/{run_id}"
    session.expire_all()
    assert session.scalars(select(NightlyRun.notified_at)).one() == FIRED + dt.timedelta(hours=1)
