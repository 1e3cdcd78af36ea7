"""Webhook deliveries: stored when they arrive, carried out afterwards, retried while GitHub fails.

GitHub waits 10 s for an answer and does not redeliver on its own, so the webhook only verifies,
reads and stores a delivery (:func:`receive`) and answers at once. :func:`process_pending` then
carries it out: right after the answer (a background task of the request) and from the scheduler
for anything still pending. A delivery is claimed before it is worked on, so two processes never
carry out the same one. While GitHub fails (no answer, 5xx, rate limits) it is tried again with
backoff, up to :data:`MAX_ATTEMPTS`; a rate limit is tried again when GitHub's limit resets and is
not counted as an attempt. When GitHub refuses perftrack itself (App not installed, bad credentials)
it fails at once and says so, in the log and in a reply. A redelivery of a failed delivery (GitHub's
"Redeliver" button) runs it again; of any other, does nothing.

A pull request's push, label or close waits while an earlier delivery of the same pull request is
still pending (a ``/perf`` whose reading of GitHub is being retried), so that it is carried out after
it, as it would have been had GitHub answered: a push then re-runs that ``/perf`` on the new head.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from tracker.enums import DeliveryState
from tracker.errors import Conflict, PerftrackError
from tracker.github.bot import act, decide, is_own_comment, reply
from tracker.github.client import GithubClient, GithubError, GithubRateLimited, GithubSetupError
from tracker.github.commands import find_command
from tracker.github.events import (
    CheckRunEvent,
    CommentEvent,
    Event,
    MalformedDelivery,
    PullRequestEvent,
    event_from_dict,
)
from tracker.github.render import code
from tracker.models import GithubDelivery, utcnow
from tracker.settings import Settings

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
RETRY_AFTER_S = (15, 60, 120, 300, 600, 1200, 1800)  # between attempts: about an hour in all
CLAIM_S = 300  # a claimed delivery is its claimer's for this long (then it is due again)
_ERROR_CHARS = 500


@dataclass(frozen=True)
class Receipt:
    """What the webhook answers: its status code, the outcome, and the row to carry out, if any."""

    status_code: int
    outcome: str
    pending_id: int | None = None


def receive(
    *,
    session: Session,
    settings: Settings,
    delivery_id: str,
    event_name: str,
    action: str,
    event: Event | None,
) -> Receipt:
    """Store a verified delivery (once per delivery id) and commit; nothing here calls GitHub."""
    existing = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == delivery_id))
    if existing is not None:
        if existing.state is not DeliveryState.FAILED or existing.payload is None:
            return Receipt(
                200, "already handled" if existing.state is DeliveryState.DONE else "already queued"
            )
        requeue(existing)  # redelivered after a failure: try again
        session.commit()
        return Receipt(202, "queued again", existing.id)
    row = GithubDelivery(delivery_id=delivery_id, event=event_name[:64], action=action[:64])
    status_code, row.outcome, row.state = _triage(event_name, event, settings)
    if row.state is DeliveryState.PENDING:
        assert event is not None
        row.payload = event.to_dict()
    else:
        row.handled_at = utcnow()
    session.add(row)
    try:
        session.commit()
    except IntegrityError:  # the same delivery, received concurrently by another worker
        session.rollback()
        return Receipt(200, "already handled")
    return Receipt(status_code, row.outcome, row.id if row.state is DeliveryState.PENDING else None)


def requeue(row: GithubDelivery) -> None:
    """Carry a failed delivery out again, from its first attempt (a redelivery, or an operator)."""
    if row.state is not DeliveryState.FAILED or row.payload is None:
        raise Conflict(f"delivery {row.delivery_id} is {row.state.value}; only a failed one can run again")
    row.state = DeliveryState.PENDING
    row.attempts = 0
    row.next_attempt_at = None
    row.outcome = "queued again"


def _triage(event_name: str, event: Event | None, settings: Settings) -> tuple[int, str, DeliveryState]:
    if event_name == "ping":
        return 200, "pong", DeliveryState.DONE
    if event is None:
        return 202, "ignored", DeliveryState.DONE
    if isinstance(event, CommentEvent):
        if find_command(event.body) is None:
            return 200, "ignored: no /perf command", DeliveryState.DONE
        if is_own_comment(event, settings=settings, login=None):
            return 200, "ignored: a comment of the bot itself", DeliveryState.DONE
    return 202, "queued", DeliveryState.PENDING


def process_pending(
    *,
    sessions: sessionmaker[Session],
    read_sessions: sessionmaker[Session],
    settings: Settings,
    client: GithubClient,
    now: dt.datetime | None = None,
    only: int | None = None,
    limit: int = 20,
) -> list[str]:
    """Carry out the due pending deliveries (``only``: just that row); returns their outcomes."""
    now = now or utcnow()
    with read_sessions() as session:
        query = (
            select(GithubDelivery.id)
            .where(
                GithubDelivery.state == DeliveryState.PENDING,
                or_(GithubDelivery.next_attempt_at.is_(None), GithubDelivery.next_attempt_at <= now),
            )
            .order_by(GithubDelivery.id)
            .limit(limit)
        )
        if only is not None:
            query = query.where(GithubDelivery.id == only)
        due = list(session.scalars(query))
    outcomes = []
    for row_id in due:
        outcome = _process(
            sessions=sessions,
            read_sessions=read_sessions,
            settings=settings,
            client=client,
            row_id=row_id,
            now=now,
        )
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes


def _process(
    *,
    sessions: sessionmaker[Session],
    read_sessions: sessionmaker[Session],
    settings: Settings,
    client: GithubClient,
    row_id: int,
    now: dt.datetime,
) -> str | None:
    claimed = _claim(sessions, row_id, now)
    if claimed is None:
        return None  # another process has it, or it is done
    attempt, event = claimed
    if isinstance(event, PullRequestEvent):
        earlier = _earlier_pending(read_sessions, row_id, event)
        if earlier is not None:
            return _wait_for(sessions, row_id, attempt, earlier, now)
    try:
        with read_sessions() as session:
            decision = decide(
                session=session, settings=settings, client=client, event=event, delivery_row=row_id
            )
    except GithubError as error:
        return _github_failed(sessions, row_id, event, attempt, now, error)
    except Exception as error:  # a bug: keep the delivery, log it, try again later
        logger.exception("GitHub delivery %d: unexpected error", row_id)
        if attempt < MAX_ATTEMPTS:
            return _retry(sessions, row_id, now, attempt, f"{type(error).__name__}: {error}")
        return _fail(sessions, row_id, event, f"failed: {type(error).__name__}", None)
    with sessions() as session:
        row = session.get(GithubDelivery, row_id)
        if row is None or row.state is not DeliveryState.PENDING or row.attempts != attempt:
            return None  # its claim ran out and another process took it over
        try:
            outcome = act(session=session, event=event, decision=decision)
        except PerftrackError as error:
            session.rollback()
            return _fail(
                sessions,
                row_id,
                event,
                f"failed: {error}",
                f"perftrack could not carry out {_what(event)}: {error}",
            )
        _finish(row, DeliveryState.DONE, outcome)
        session.commit()
        return outcome


def _github_failed(
    sessions: sessionmaker[Session],
    row_id: int,
    event: Event,
    attempt: int,
    now: dt.datetime,
    error: GithubError,
) -> str:
    """Deciding failed on GitHub: fail at once on a set-up problem, wait for a rate limit's reset,
    retry a transient failure while attempts are left, else give up with a reply."""
    if isinstance(error, GithubSetupError):
        logger.error("GitHub delivery %d: perftrack cannot act on %s: %s", row_id, event.repository, error)
        message = (
            f"perftrack cannot act on this repository: {error}. An administrator must fix perftrack's "
            "GitHub set-up (see docs/operations.md); then ask again."
        )
        return _fail(sessions, row_id, event, f"failed: {error}", message)
    if isinstance(error, GithubRateLimited):
        return _rate_limited(sessions, row_id, attempt, error)
    if error.transient and attempt < MAX_ATTEMPTS:
        return _retry(sessions, row_id, now, attempt, f"GitHub: {error}")
    logger.warning("GitHub delivery %d given up after %d attempt(s): %s", row_id, attempt, error)
    what = _what(event)
    return _fail(
        sessions,
        row_id,
        event,
        f"failed: {error}",
        f"perftrack could not carry out {what}: GitHub answered {error}",
    )


def _claim(sessions: sessionmaker[Session], row_id: int, now: dt.datetime) -> tuple[int, Event] | None:
    """Take a due delivery for :data:`CLAIM_S` (an atomic update: one process wins)."""
    with sessions() as session:
        taken = session.execute(
            update(GithubDelivery)
            .where(
                GithubDelivery.id == row_id,
                GithubDelivery.state == DeliveryState.PENDING,
                or_(GithubDelivery.next_attempt_at.is_(None), GithubDelivery.next_attempt_at <= now),
            )
            .values(attempts=GithubDelivery.attempts + 1, next_attempt_at=now + dt.timedelta(seconds=CLAIM_S))
            .execution_options(synchronize_session=False)
        )
        if getattr(taken, "rowcount", 0) != 1:
            session.rollback()
            return None
        row = session.get(GithubDelivery, row_id)
        assert row is not None
        try:
            event = event_from_dict(row.payload or {})
        except MalformedDelivery as error:
            _finish(row, DeliveryState.FAILED, f"failed: the stored event cannot be read: {error}")
            session.commit()
            return None
        attempt = row.attempts
        session.commit()
        return attempt, event


def _retry(sessions: sessionmaker[Session], row_id: int, now: dt.datetime, attempt: int, error: str) -> str:
    wait = RETRY_AFTER_S[min(attempt, len(RETRY_AFTER_S)) - 1]
    with sessions() as session:
        row = session.get(GithubDelivery, row_id)
        if row is not None and row.state is DeliveryState.PENDING:
            row.next_attempt_at = now + dt.timedelta(seconds=wait)
            row.last_error = error[:_ERROR_CHARS]
            row.outcome = f"retrying in {wait} s (attempt {attempt} of {MAX_ATTEMPTS})"
            session.commit()
    logger.info("GitHub delivery %d: attempt %d failed (%s); next in %d s", row_id, attempt, error, wait)
    return f"retrying: {error}"


def _rate_limited(
    sessions: sessionmaker[Session], row_id: int, attempt: int, error: GithubRateLimited
) -> str:
    """Try again when GitHub's rate limit resets; not counted as an attempt."""
    outcome = f"rate limited by GitHub; trying again at {error.retry_at:%Y-%m-%d %H:%M:%S} UTC"
    with sessions() as session:
        row = session.get(GithubDelivery, row_id)
        if row is not None and row.state is DeliveryState.PENDING and row.attempts == attempt:
            row.attempts = attempt - 1
            row.next_attempt_at = error.retry_at
            row.last_error = f"GitHub: {error}"[:_ERROR_CHARS]
            row.outcome = outcome
            session.commit()
    logger.info("GitHub delivery %d: %s (%s)", row_id, outcome, error)
    return f"retrying: {outcome}"


def _earlier_pending(
    read_sessions: sessionmaker[Session], row_id: int, event: PullRequestEvent
) -> GithubDelivery | None:
    """The first delivery of the same pull request received before row ``row_id`` and still pending."""
    with read_sessions() as session:
        earlier = session.scalars(
            select(GithubDelivery)
            .where(
                GithubDelivery.id < row_id,
                GithubDelivery.state == DeliveryState.PENDING,
                GithubDelivery.payload.is_not(None),
            )
            .order_by(GithubDelivery.id)
        )
        for row in earlier:
            try:
                other = event_from_dict(row.payload or {})
            except MalformedDelivery:
                continue
            if other.repository.lower() == event.repository.lower() and other.pr_number == event.pr_number:
                session.expunge(row)
                return row
    return None


def _wait_for(
    sessions: sessionmaker[Session], row_id: int, attempt: int, earlier: GithubDelivery, now: dt.datetime
) -> str:
    """Put a delivery off until ``earlier`` (of the same pull request) is carried out; not an attempt."""
    outcome = f"waiting for delivery {earlier.delivery_id} of the same pull request"
    with sessions() as session:
        row = session.get(GithubDelivery, row_id)
        if row is not None and row.state is DeliveryState.PENDING and row.attempts == attempt:
            row.attempts = attempt - 1
            row.next_attempt_at = max(earlier.next_attempt_at or now, now)
            row.outcome = outcome
            session.commit()
    return outcome


def _fail(
    sessions: sessionmaker[Session], row_id: int, event: Event, outcome: str, message: str | None
) -> str:
    with sessions() as session:
        row = session.get(GithubDelivery, row_id)
        if row is None:
            return outcome
        _finish(row, DeliveryState.FAILED, outcome)
        row.last_error = outcome[:_ERROR_CHARS]
        if message is not None:
            reply(session, event, message)  # the outbox sends it when GitHub lets it
        session.commit()
    return outcome


def _finish(row: GithubDelivery, state: DeliveryState, outcome: str) -> None:
    row.state = state
    row.outcome = outcome
    row.next_attempt_at = None
    row.handled_at = utcnow()


def _what(event: Event) -> str:
    if isinstance(event, CommentEvent):
        return code(find_command(event.body) or "/perf")
    if isinstance(event, CheckRunEvent):
        return f"the re-run of comparison {event.comparison_id} from its check run"
    return f"the {event.action} of this pull request"


def prune_deliveries(*, session: Session, now: dt.datetime, keep: dt.timedelta) -> int:
    """Forget finished deliveries received before ``now - keep`` (GitHub redelivers for 3 days)."""
    result = session.execute(
        delete(GithubDelivery)
        .where(GithubDelivery.state != DeliveryState.PENDING, GithubDelivery.received_at < now - keep)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)
