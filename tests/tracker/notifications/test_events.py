"""Events reach the subscriptions that want them, through the outbox: an alert group confirmed, its
culprit named, fixed; a pull request's verdict; a nightly summary. Each delivered by a local
receiver with its body, event name, delivery id and a valid signature; each told once."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.comparisons.test_comparisons import compare, drive, planted
from tests.tracker.detection.test_alerts import BASE_MS, SLOW_MS, commit_in, sha
from tests.tracker.notifications.receiver import Receiver, signed_by
from tracker.detection.group_notices import tell_group
from tracker.detection.triage import triage_alert
from tracker.enums import AlertConfirmation, ComparisonState, NotificationEvent
from tracker.models import Alert, Commit, Job, NightlyRun, NotificationOutbox, NotificationSubscription
from tracker.notifications.outbox import flush_notifications
from tracker.notifications.subscriptions import NewSubscription, create_subscription
from tracker.scheduling.nightly_notices import notify_finished_nightlies

pytestmark = pytest.mark.dialect

SECRET = "a-receiver-secret-of-some-length"
PUBLIC = "https://perf.example.org"


def subscribe(session: Session, name: str = "all", **kwargs: Any) -> NotificationSubscription:
    new = NewSubscription(name=name, url=f"https://hooks.example.org/{name}", secret=SECRET, **kwargs)
    return create_subscription(session=session, new=new)


def regression(session: Session) -> Alert:
    """Eight nights; commit 6 makes the case 9 % slower: confirmed in paired rounds, culprit named."""
    bench = Bench(session)
    rng = random.Random(3)

    def measure(commit: Commit, job: Job) -> float:
        return (SLOW_MS if int(commit.sha[:7], 16) >= 6 else BASE_MS) * (1 + rng.gauss(0, 0.002))

    for index in range(8):
        bench.nightly(commit_in(index))
        bench.drain(measure)
    [alert] = session.scalars(select(Alert)).all()
    assert alert.confirmation is AlertConfirmation.CONFIRMED
    return alert


def rows(session: Session) -> list[NotificationOutbox]:
    return list(session.scalars(select(NotificationOutbox).order_by(NotificationOutbox.id)))


def test_a_confirmed_regression_and_its_culprit_are_delivered_signed(session: Session) -> None:
    subscribe(session)
    alert = regression(session)
    receiver = Receiver()
    report = flush_notifications(session=session, client=receiver.client(), public_url=PUBLIC)
    assert report.sent == 2
    confirmed = receiver.got[0]
    assert [request.headers["X-Perftrack-Event"] for request in receiver.got] == [
        "group.confirmed",
        "group.culprit",
    ]
    for request in receiver.got:
        assert signed_by(request, SECRET)
        assert not signed_by(request, SECRET + "x")
        assert request.url == "https://hooks.example.org/all"
    body = receiver.bodies()[0]
    group = alert.group
    assert group is not None
    assert body["delivery"] == confirmed.headers["X-Perftrack-Delivery"]
    assert body["subject"] == {"kind": "group", "id": group.id}
    assert body["url"] == f"{PUBLIC}/groups/{group.id}"
    assert body["title"] == f"Confirmed: 1 regression in group {group.id}"
    [told] = body["details"]["alerts"]
    assert (told["alert_id"], told["case"], told["hardware"]) == (alert.id, "qwen-image-t2i-1024", "H200")
    assert told["change_pct"] > 8
    assert told["ci_pct"][0] > 5
    assert body["lines"][1].startswith("`qwen-image-t2i-1024` on H200: denoise_step_ms regression +")
    assert "% (95 % one-sided bounds)" in body["lines"][1]
    assert "; steady-state step +" in body["lines"][1]  # the diagnosis's most telling finding
    assert receiver.bodies()[1]["details"]["culprit"] == sha(6)
    assert all(row.done_at is not None for row in rows(session))


def test_a_group_told_again_is_told_once(session: Session) -> None:
    subscribe(session)
    alert = regression(session)
    again = tell_group(session=session, group=alert.group, now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    assert again == []
    assert [row.event for row in rows(session)] == [
        NotificationEvent.GROUP_CONFIRMED,
        NotificationEvent.GROUP_CULPRIT,
    ]


def test_an_alert_marked_fixed_tells_its_group_fixed(session: Session) -> None:
    alert = regression(session)
    subscribe(session, events=["group.fixed"])
    triage_alert(
        session=session,
        alert_id=alert.id,
        status="fixed",
        actor="ada",
        reason="reverted",
        now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC),
    )
    receiver = Receiver()
    flush_notifications(session=session, client=receiver.client())
    [body] = receiver.bodies()
    assert body["event"] == "group.fixed"
    assert body["details"]["state"] == "fixed"
    assert body["details"]["alerts"][0]["status"] == "fixed"
    assert body["title"] == f"Fixed: group {alert.group_id} (1 regression)"


def test_a_pull_request_verdict_is_told_once_it_is_final(session: Session) -> None:
    subscribe(session, events=["pr.verdict"])
    comparison = compare(session, rounds=2)
    drive(session, planted(10.0))
    assert comparison.state is ComparisonState.DONE
    receiver = Receiver()
    flush_notifications(session=session, client=receiver.client())
    [body] = receiver.bodies()
    assert body["event"] == "pr.verdict"
    assert body["subject"] == {"kind": "comparison", "id": comparison.id}
    [result] = body["details"]["results"]
    assert (result["case"], result["hardware"], result["verdict"]) == (
        "qwen-image-t2i-1024",
        "H200",
        "regression",
    )
    assert body["lines"][0].startswith("`qwen-image-t2i-1024` on H200: regression +")


def test_a_nightly_summary_is_told_once(session: Session) -> None:
    subscribe(session, events=["nightly.summary"])
    fired = dt.datetime(2026, 6, 1, 2, tzinfo=dt.UTC)
    run = NightlyRun(
        schedule="nightly-h200", fired_at=fired, branch="main", error="no commit on main", backfilled=[]
    )
    session.add(run)
    session.flush()
    assert notify_finished_nightlies(session=session, now=fired) == [run.id]
    assert notify_finished_nightlies(session=session, now=fired) == []
    receiver = Receiver()
    flush_notifications(session=session, client=receiver.client())
    [body] = receiver.bodies()
    assert body["event"] == "nightly.summary"
    assert body["title"] == "Nightly nightly-h200 for 2026-06-01 02:00 UTC"
    assert body["lines"][0] == "did not run: no commit on main"
    assert "still open: 0" in body["lines"]


def test_a_subscription_hears_only_the_events_it_asked_for(session: Session) -> None:
    subscribe(session, "fixes", events=["group.fixed"])
    regression(session)
    assert rows(session) == []
