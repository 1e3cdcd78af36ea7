"""Sending the notification outbox: the Slack body, filters, retries with backoff, 429's
Retry-After, dead letters and their retry, a test, redacted errors; and a failing receiver never
reaches detection."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.notifications.receiver import Receiver
from tests.tracker.notifications.test_events import regression, rows, subscribe
from tracker.enums import AlertStatus, NotificationEvent, NotificationFormat, NotificationSubject
from tracker.errors import Conflict, InvalidInput
from tracker.models import Alert, NotificationOutbox
from tracker.notifications import outbox
from tracker.notifications.events import Notice, Scope, notify
from tracker.notifications.outbox import DEAD_AFTER, backoff, flush_notifications
from tracker.notifications.subscriptions import NewSubscription, create_subscription

pytestmark = pytest.mark.dialect

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)


def notice(**scope: object) -> Notice:
    return Notice(
        event=NotificationEvent.GROUP_CONFIRMED,
        subject_kind=NotificationSubject.ALERT,
        subject_id=7,
        title="Confirmed regression on `flux` <b>",
        lines=("denoise_step_ms: +9.0 %", "culprit: abc1234 Fuse <norm> & friends"),
        path="/alerts/7",
        scope=Scope(**scope),  # type: ignore[arg-type]
    )


def test_a_slack_subscription_gets_text_and_mrkdwn_blocks_unsigned(session: Session) -> None:
    create_subscription(
        session=session,
        new=NewSubscription(name="slack", url="https://hooks.slack.com/services/T0/B0/xyz", format="slack"),
    )
    notify(session=session, notice=notice())
    receiver = Receiver()
    flush_notifications(session=session, client=receiver.client(), public_url="https://perf.example.org/")
    [request] = receiver.got
    body = json.loads(request.content)
    assert set(body) == {"text", "blocks"}
    assert body["text"].startswith("Confirmed regression on `flux` &lt;b&gt;\n")
    section, context = body["blocks"]
    assert section["text"]["type"] == "mrkdwn"
    assert section["text"]["text"].startswith(
        "*<https://perf.example.org/alerts/7|Confirmed regression on `flux` &lt;b&gt;>*\n"
    )
    assert "Fuse &lt;norm&gt; &amp; friends" in section["text"]["text"]
    assert context["elements"][0]["text"] == "<https://perf.example.org/alerts/7|open in perftrack>"
    assert "X-Perftrack-Signature-256" not in request.headers
    assert request.headers["X-Perftrack-Event"] == "group.confirmed"


@pytest.mark.parametrize(
    ("filters", "told"),
    [
        ({}, True),
        ({"models": ["flux-t2i"]}, True),
        ({"models": ["black-forest-labs/FLUX.1-dev"]}, True),
        ({"models": ["wan-t2v"]}, False),
        ({"hardware": ["H200"]}, True),
        ({"hardware": ["B200"]}, False),
        ({"repositories": ["sgl-project/sglang"]}, True),
        ({"repositories": ["other/repo"]}, False),
        ({"models": ["flux-t2i"], "hardware": ["B200"]}, False),
    ],
)
def test_subscriptions_are_filtered_by_model_hardware_and_repository(
    session: Session, filters: dict[str, Any], told: bool
) -> None:
    subscribe(session, **filters)
    scope = {
        "models": frozenset({"flux-t2i", "black-forest-labs/FLUX.1-dev"}),
        "hardware": frozenset({"H200"}),
        "repository": "sgl-project/sglang",
    }
    assert bool(notify(session=session, notice=notice(**scope))) is told


def test_a_filter_that_does_not_apply_lets_the_event_through(session: Session) -> None:
    subscribe(session, models=["wan-t2v"], hardware=["B200"])
    assert notify(session=session, notice=notice(repository="sgl-project/sglang"))  # a nightly's scope


def test_a_failing_receiver_is_retried_with_backoff_then_dead_lettered_and_retried(session: Session) -> None:
    subscribe(session)
    notify(session=session, notice=notice())
    receiver = Receiver(answers=[500] * DEAD_AFTER)
    now = NOW
    for attempt in range(1, DEAD_AFTER + 1):
        early = now - dt.timedelta(seconds=1)
        if attempt > 1:  # not due before its backoff is over
            assert flush_notifications(session=session, client=receiver.client(), now=early).sent == 0
        report = flush_notifications(session=session, client=receiver.client(), now=now)
        [row] = rows(session)
        assert row.attempts == attempt
        assert row.last_status == 500
        assert row.last_error == "HTTP 500: nope"
        if attempt < DEAD_AFTER:
            assert report.failed == 1
            assert row.next_attempt_at == now + backoff(attempt)
            now = row.next_attempt_at
    assert report.dead == 1
    assert row.dead_at == now
    assert outbox.dead_letters(session=session) == [row]
    assert (
        flush_notifications(session=session, client=receiver.client(), now=now + dt.timedelta(days=9)).sent
        == 0
    )
    assert len(receiver.got) == DEAD_AFTER

    outbox.revive(session=session, row_id=row.id)
    assert flush_notifications(session=session, client=receiver.client(), now=now).sent == 1
    assert row.done_at is not None
    assert outbox.dead_letters(session=session) == []
    assert {request.headers["X-Perftrack-Delivery"] for request in receiver.got} == {row.delivery}
    with pytest.raises(Conflict):
        outbox.revive(session=session, row_id=row.id)


def test_backoff_doubles_up_to_an_hour() -> None:
    assert [backoff(n).total_seconds() for n in (1, 2, 3, 4, 10)] == [30, 60, 120, 240, 3600]


@pytest.mark.parametrize(
    "retry_after", ["120", (NOW + dt.timedelta(seconds=120)).strftime("%a, %d %b %Y %H:%M:%S GMT")]
)
def test_a_429_waits_as_long_as_retry_after_says(session: Session, retry_after: str) -> None:
    subscribe(session)
    notify(session=session, notice=notice())
    limited = httpx.Response(429, headers={"Retry-After": retry_after})
    receiver = Receiver(answers=[lambda request: limited])
    client = receiver.client()
    report = flush_notifications(session=session, client=client, now=NOW)
    [row] = rows(session)
    assert report.failed == 1
    assert row.last_status == 429
    assert row.next_attempt_at == NOW + dt.timedelta(seconds=120)  # not the backoff's 30 s
    assert flush_notifications(session=session, client=client, now=NOW + dt.timedelta(seconds=60)).sent == 0
    wait_over = (row.next_attempt_at or NOW) + dt.timedelta(seconds=1)
    assert flush_notifications(session=session, client=client, now=wait_over).sent == 1


def test_a_test_delivery_is_sent_to_its_subscription(session: Session) -> None:
    subscription = subscribe(session)
    row = outbox.queue_test(session=session, subscription_id=subscription.id)
    receiver = Receiver()
    assert outbox.send_one(session=session, row_id=row.id, client=receiver.client()) == "sent"
    [body] = receiver.bodies()
    assert body["event"] == "test"
    assert body["subject"] == {"kind": "subscription", "id": subscription.id}
    assert outbox.send_one(session=session, row_id=row.id, client=receiver.client()) is None  # sent once


def test_errors_are_stored_without_the_url_or_the_secret(session: Session) -> None:
    url = "https://hooks.example.org/services/T0/B0/s3cr3t-path-token"
    create_subscription(session=session, new=NewSubscription(name="slack", url=url, format="slack"))
    notify(session=session, notice=notice())

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot reach {request.url}", request=request)

    flush_notifications(session=session, client=httpx.Client(transport=httpx.MockTransport(refuse)), now=NOW)
    [row] = rows(session)
    assert row.last_error is not None
    assert row.last_error.startswith("ConnectError: cannot reach ")
    assert "s3cr3t" not in row.last_error


def test_a_failing_receiver_never_blocks_detection(session: Session) -> None:
    """Detection only writes the outbox: the receiver is not called while alerts are confirmed and
    bisected, and its failures afterwards leave the alert as detection left it."""
    subscribe(session)
    calls: list[str] = []

    def broken(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        raise httpx.ReadTimeout("the receiver hangs", request=request)

    alert = regression(session)  # the whole nightly series, confirmation and bisection
    assert calls == []
    queued = rows(session)
    assert [row.event for row in queued] == [
        NotificationEvent.GROUP_CONFIRMED,
        NotificationEvent.GROUP_CULPRIT,
    ]
    report = flush_notifications(
        session=session, client=httpx.Client(transport=httpx.MockTransport(broken)), now=NOW
    )
    assert report.failed == 2
    assert len(calls) == 2
    session.expire_all()
    stored = session.scalars(select(Alert)).one()
    assert stored.id == alert.id
    assert stored.status is AlertStatus.OPEN
    assert stored.culprit_commit_id is not None
    assert all(row.done_at is None and row.dead_at is None for row in rows(session))


def test_a_subscription_is_checked(session: Session) -> None:
    with pytest.raises(InvalidInput, match="url"):
        create_subscription(session=session, new=NewSubscription(name="x", url="ftp://example.org"))
    with pytest.raises(InvalidInput, match="events"):
        create_subscription(
            session=session, new=NewSubscription(name="x", url="https://a.b", events=["nope"])
        )
    with pytest.raises(InvalidInput, match="secret"):
        create_subscription(session=session, new=NewSubscription(name="x", url="https://a.b", secret="short"))
    with pytest.raises(InvalidInput, match="format"):
        create_subscription(session=session, new=NewSubscription(name="x", url="https://a.b", format="xml"))
    subscribe(session, "taken")
    with pytest.raises(Conflict):
        subscribe(session, "taken")
    assert session.scalars(select(NotificationOutbox)).all() == []
    assert NotificationFormat.SLACK.value == "slack"
