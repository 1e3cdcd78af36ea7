"""Sending the notification outbox: after commit, with no transaction open while a receiver is
called, retried with backoff, given up (a dead letter) after :data:`DEAD_AFTER` failed tries.

The pattern of :mod:`tracker.github.outbox`: :func:`flush_notifications` lists the due rows, claims
each in a short transaction (for :data:`CLAIM_S`; on PostgreSQL a row being claimed is locked and
skipped by other senders), POSTs it with none open, and writes the outcome in another. A 2xx is
sent; anything else (a status, a timeout, a refused connection) is a failure: the row waits
:func:`backoff` (30 s, 1, 2, 4 ... minutes, at most an hour), or what a 429's ``Retry-After`` asks
(at most a day). Redirects are not followed. A dead letter is listed by :func:`dead_letters` and
tried again by :func:`revive`. A receiver that fails never reaches detection: events only write
rows; this module alone calls out. Errors are stored and logged redacted (the URL and the secret
are credentials).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx
from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from tracker.access.redaction import Redactor
from tracker.enums import NotificationEvent, NotificationSubject
from tracker.errors import Conflict, NotFound
from tracker.models import NotificationOutbox, NotificationSubscription, utcnow
from tracker.notifications.bodies import Outgoing, render
from tracker.notifications.events import Notice, queue_delivery
from tracker.notifications.subscriptions import get_subscription, masked_url

logger = logging.getLogger(__name__)

BACKOFF_FIRST_S = 30
BACKOFF_MAX_S = 3600
RETRY_AFTER_MAX_S = 86400  # a receiver's Retry-After is honoured up to a day
DEAD_AFTER = 6  # failed tries before a delivery is a dead letter
CLAIM_S = 120  # a row being sent is its sender's for this long (then it is due again)
TIMEOUT_S = 10.0
_ERROR_CHARS = 500


@dataclass(frozen=True)
class FlushReport:
    """What one flush did."""

    sent: int = 0
    failed: int = 0
    dead: int = 0


@dataclass(frozen=True)
class Failure:
    """Why a delivery failed, and when the receiver asked to be tried again (a 429's ``Retry-After``)."""

    error: str
    status: int | None = None
    retry_after: dt.timedelta | None = None


def backoff(attempts: int) -> dt.timedelta:
    """How long to wait after the ``attempts``-th failed try."""
    return dt.timedelta(seconds=min(BACKOFF_FIRST_S * 2 ** max(attempts - 1, 0), BACKOFF_MAX_S))


def default_client() -> httpx.Client:
    """The client deliveries go out on: a short timeout, no redirects followed."""
    return httpx.Client(timeout=TIMEOUT_S, follow_redirects=False)


def flush_notifications(
    *,
    session: Session,
    client: httpx.Client | None = None,
    now: dt.datetime | None = None,
    limit: int = 100,
    public_url: str | None = None,
) -> FlushReport:
    """Send the due deliveries in order; failures are retried later. Commits as it goes.

    ``public_url`` (the tracker's) makes each event's link absolute; ``client`` is the HTTP client
    (by default :func:`default_client`, closed afterwards)."""
    clock: Callable[[], dt.datetime] = utcnow if now is None else (lambda: now)
    due = _due(session=session, now=clock(), limit=limit)
    session.commit()
    counts = {"sent": 0, "failed": 0, "dead": 0}
    owned = client is None
    client = client or default_client()
    try:
        for row_id in due:
            outcome = send_one(
                session=session, row_id=row_id, client=client, now=clock(), public_url=public_url
            )
            if outcome is not None:
                counts[outcome] += 1
    finally:
        if owned:
            client.close()
    return FlushReport(**counts)


def send_one(
    *,
    session: Session,
    row_id: int,
    client: httpx.Client,
    now: dt.datetime | None = None,
    public_url: str | None = None,
) -> str | None:
    """Claim, send and settle one due delivery, committing its claim before the receiver is called;
    ``sent``, ``failed`` or ``dead``, or ``None`` when it was not due (sent, dead, or claimed)."""
    now = now or utcnow()
    outgoing = _claim(session=session, row_id=row_id, now=now, public_url=public_url)
    session.commit()
    if outgoing is None:
        return None
    failure = deliver(client=client, outgoing=outgoing, now=now)
    outcome = _settle(session=session, outgoing=outgoing, failure=failure, now=now)
    session.commit()
    return outcome


def deliver(*, client: httpx.Client, outgoing: Outgoing, now: dt.datetime) -> Failure | None:
    """POST one delivery; ``None`` when the receiver took it (2xx). ``now`` reads a ``Retry-After``
    date."""
    body, headers = render(outgoing)
    redactor = Redactor([outgoing.url, *([outgoing.secret] if outgoing.secret else [])])
    try:
        response = client.post(outgoing.url, content=body, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        return Failure(error=redactor.text(f"{type(error).__name__}: {error}")[:_ERROR_CHARS])
    if response.is_success:
        return None
    text = redactor.text(response.text[:200].strip())
    return Failure(
        error=f"HTTP {response.status_code}{': ' + text if text else ''}"[:_ERROR_CHARS],
        status=response.status_code,
        retry_after=retry_after(response, now=now) if response.status_code == 429 else None,
    )


def retry_after(response: httpx.Response, *, now: dt.datetime) -> dt.timedelta | None:
    """A ``Retry-After`` header as a wait: seconds or an HTTP date, at most a day; ``None`` without one."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": UTC as RFC 5322 writes an unknown zone
            when = when.replace(tzinfo=dt.UTC)
        seconds = (when - now).total_seconds()
    return dt.timedelta(seconds=max(0.0, min(seconds, RETRY_AFTER_MAX_S)))


def _due(*, session: Session, now: dt.datetime, limit: int) -> Sequence[int]:
    return session.scalars(
        select(NotificationOutbox.id).where(*_due_now(now)).order_by(NotificationOutbox.id).limit(limit)
    ).all()


def _due_now(now: dt.datetime) -> tuple[ColumnElement[bool], ...]:
    return (
        NotificationOutbox.done_at.is_(None),
        NotificationOutbox.dead_at.is_(None),
        NotificationOutbox.next_attempt_at.is_(None) | (NotificationOutbox.next_attempt_at <= now),
    )


def _claim(
    *, session: Session, row_id: int, now: dt.datetime, public_url: str | None = None
) -> Outgoing | None:
    """Take a due row for :data:`CLAIM_S` and read what it sends; ``None`` when another sender has
    it, it is done, or its subscription is gone."""
    row = session.scalar(
        select(NotificationOutbox)
        .where(NotificationOutbox.id == row_id, *_due_now(now))
        .with_for_update(skip_locked=True)
    )
    if row is None:
        return None
    subscription = session.get(NotificationSubscription, row.subscription_id)
    if subscription is None:
        return None
    row.next_attempt_at = now + dt.timedelta(seconds=CLAIM_S)
    return Outgoing(
        row_id=row.id,
        delivery=row.delivery,
        event=row.event,
        subject_kind=row.subject_kind,
        subject_id=row.subject_id,
        payload=dict(row.payload),
        url=subscription.url,
        format=subscription.format,
        secret=subscription.secret,
        public_url=public_url,
    )


def _settle(*, session: Session, outgoing: Outgoing, failure: Failure | None, now: dt.datetime) -> str:
    """Write a try's outcome: ``sent``, ``failed`` (due again later) or ``dead``."""
    row = session.get(NotificationOutbox, outgoing.row_id)
    if row is None:  # its subscription was deleted meanwhile
        return "failed"
    row.attempts += 1
    if failure is None:
        row.done_at = now
        row.last_status = None
        return "sent"
    row.last_error = failure.error
    row.last_status = failure.status
    wait = failure.retry_after if failure.retry_after is not None else backoff(row.attempts)
    row.next_attempt_at = now + wait
    where = f"{masked_url(outgoing.url)} (delivery {row.delivery}, {row.event.value})"
    if row.attempts >= DEAD_AFTER:
        row.dead_at = now
        logger.error("notification to %s given up after %d tries: %s", where, row.attempts, failure.error)
        return "dead"
    logger.warning("notification to %s failed (try %d): %s", where, row.attempts, failure.error)
    return "failed"


def dead_letters(*, session: Session, limit: int = 200) -> list[NotificationOutbox]:
    """The deliveries given up, newest first."""
    return list(
        session.scalars(
            select(NotificationOutbox)
            .where(NotificationOutbox.dead_at.is_not(None), NotificationOutbox.done_at.is_(None))
            .order_by(NotificationOutbox.dead_at.desc(), NotificationOutbox.id.desc())
            .limit(limit)
        )
    )


def pending(*, session: Session, subscription_id: int | None = None) -> list[NotificationOutbox]:
    """Deliveries not sent yet and not given up, oldest first."""
    query = (
        select(NotificationOutbox)
        .where(NotificationOutbox.done_at.is_(None), NotificationOutbox.dead_at.is_(None))
        .order_by(NotificationOutbox.id)
    )
    if subscription_id is not None:
        query = query.where(NotificationOutbox.subscription_id == subscription_id)
    return list(session.scalars(query))


def revive(*, session: Session, row_id: int) -> NotificationOutbox:
    """Try a dead letter again at the next flush, with a fresh count of tries."""
    row = session.get(NotificationOutbox, row_id)
    if row is None:
        raise NotFound(f"no notification delivery {row_id}")
    if row.done_at is not None:
        raise Conflict(f"notification delivery {row_id} was sent already")
    row.dead_at = None
    row.attempts = 0
    row.next_attempt_at = None
    session.flush()
    return row


def queue_test(*, session: Session, subscription_id: int) -> NotificationOutbox:
    """Queue a test delivery to one subscription (sent by the next flush, or at once by the caller)."""
    subscription = get_subscription(session=session, subscription_id=subscription_id)
    notice = Notice(
        event=NotificationEvent.TEST,
        subject_kind=NotificationSubject.SUBSCRIPTION,
        subject_id=subscription.id,
        title=f"perftrack test notification for {subscription.name}",
        lines=("If you can read this, the subscription works.",),
        details={"subscription": subscription.name, "test": str(uuid.uuid4())},
    )
    row = queue_delivery(session=session, subscription=subscription, notice=notice)
    assert row is not None  # a test has no dedupe key
    return row
