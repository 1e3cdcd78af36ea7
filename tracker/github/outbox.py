"""Every GitHub write goes through the outbox: a row written in the transaction of the change it
reports, sent after commit by :func:`flush_outbox`, retried with exponential backoff until it
succeeds. Kinds:

- ``comment``: the comparison's one comment, created once (its id stored on the comparison) and
  edited in place afterwards; its body is rendered when sent, so it always shows the latest state
  and only the newest pending row of a comparison is sent.
- ``reply``: a new comment on a pull request (help, refusals, errors).
- ``reaction``: a reaction to a comment.
- ``status``: a commit status on the PR's head sha.

A row GitHub refuses for good (400, 403 without a rate limit, 404, 410, 422: the PR or comment is gone,
the App lost access, the payload is invalid) three times in a row is *dead*: ``dead_at`` is set, it is
no longer tried, ``perftrack github outbox --dead`` lists it and ``perftrack github retry`` revives it.
Anything else (5xx, timeouts, rate limits, bad credentials) is retried for ever, at most hourly.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.summary import comparison_view
from tracker.diagnosis.loading import comparison_diagnoses
from tracker.enums import OutboxKind
from tracker.errors import Conflict, NotFound
from tracker.github.client import GithubClient, GithubError, client_from_settings
from tracker.github.render import comparison_link, marker, render_comment
from tracker.models import Comparison, GithubOutbox, utcnow
from tracker.settings import Settings

logger = logging.getLogger(__name__)

BACKOFF_FIRST_S = 60
BACKOFF_MAX_S = 3600
_ERROR_CHARS = 500
PERMANENT_STATUSES = frozenset({400, 403, 404, 410, 422})
DEAD_AFTER = 3  # refusals in a row before a row is given up


@dataclass(frozen=True)
class FlushReport:
    """What one flush did."""

    sent: int = 0
    failed: int = 0
    superseded: int = 0
    dead: int = 0


def queue(
    *,
    session: Session,
    kind: OutboxKind,
    repository: str,
    target: str | int,
    payload: dict[str, Any] | None = None,
    comparison_id: int | None = None,
) -> GithubOutbox:
    """Add a GitHub write to the outbox (sent after the caller commits)."""
    row = GithubOutbox(
        kind=OutboxKind(kind),  # a string that names no kind is a ValueError
        repository=repository,
        target=str(target),
        payload=dict(payload or {}),
        comparison_id=comparison_id,
        attempts=0,
    )
    session.add(row)
    session.flush()
    return row


def pending(
    *, session: Session, comparison_id: int | None = None, kind: OutboxKind | None = None
) -> list[GithubOutbox]:
    """Rows not sent yet and not given up, oldest first."""
    query = (
        select(GithubOutbox)
        .where(GithubOutbox.done_at.is_(None), GithubOutbox.dead_at.is_(None))
        .order_by(GithubOutbox.id)
    )
    if comparison_id is not None:
        query = query.where(GithubOutbox.comparison_id == comparison_id)
    if kind is not None:
        query = query.where(GithubOutbox.kind == kind)
    return list(session.scalars(query))


def backoff(attempts: int) -> dt.timedelta:
    """How long to wait after the ``attempts``-th failed try: 1, 2, 4, ... minutes, at most an hour."""
    return dt.timedelta(seconds=min(BACKOFF_FIRST_S * 2 ** max(attempts - 1, 0), BACKOFF_MAX_S))


def flush_outbox(
    *,
    session: Session,
    settings: Settings,
    client: GithubClient | None = None,
    now: dt.datetime | None = None,
    limit: int = 100,
) -> FlushReport:
    """Send the due outbox rows in order, committing after each; failures are retried later.

    ``client`` defaults to the one the settings describe; without GitHub credentials nothing is sent.
    Safe to run from several processes: on PostgreSQL a row being sent is locked and skipped by others.
    """
    client = client or client_from_settings(settings)
    if client is None:
        logger.warning("GitHub outbox: no GitHub credentials configured; nothing sent")
        return FlushReport()
    now = now or utcnow()
    due = _due(session=session, now=now, limit=limit)
    session.commit()
    outcomes = {"sent": 0, "failed": 0, "superseded": 0, "dead": 0}
    for row_id in due:
        row = session.scalar(
            select(GithubOutbox)
            .where(GithubOutbox.id == row_id, GithubOutbox.done_at.is_(None), GithubOutbox.dead_at.is_(None))
            .with_for_update(skip_locked=True)
        )
        if row is None:
            session.rollback()
            continue
        outcomes[_attempt(session=session, client=client, settings=settings, row=row, now=now)] += 1
        session.commit()
    return FlushReport(**outcomes)


def _due(*, session: Session, now: dt.datetime, limit: int) -> Sequence[int]:
    """The ids of the rows to send now, oldest first: not sent, not dead, and their backoff over."""
    return session.scalars(
        select(GithubOutbox.id)
        .where(
            GithubOutbox.done_at.is_(None),
            GithubOutbox.dead_at.is_(None),
            (GithubOutbox.next_attempt_at.is_(None)) | (GithubOutbox.next_attempt_at <= now),
        )
        .order_by(GithubOutbox.id)
        .limit(limit)
    ).all()


def _attempt(
    *, session: Session, client: GithubClient, settings: Settings, row: GithubOutbox, now: dt.datetime
) -> Literal["sent", "failed", "superseded", "dead"]:
    """Send one locked row (or skip it for a newer update of the same comment); how that went."""
    try:
        if _superseded(session, row):
            row.last_error = "superseded by a newer update of the same comment"
            outcome: Literal["sent", "superseded"] = "superseded"
        else:
            _send(session=session, client=client, settings=settings, row=row)
            outcome = "sent"
        row.attempts += 1
        row.done_at = now
    except GithubError as error:
        return _failed(row=row, error=error, now=now)
    return outcome


def _failed(*, row: GithubOutbox, error: GithubError, now: dt.datetime) -> Literal["failed", "dead"]:
    """Count a failed send and set the next attempt; dead after :data:`DEAD_AFTER` refusals in a row."""
    row.attempts += 1
    refused = error.status in PERMANENT_STATUSES
    row.refusals = row.refusals + 1 if refused else 0
    row.last_error = str(error)[:_ERROR_CHARS]
    row.next_attempt_at = now + backoff(row.attempts)
    if row.refusals >= DEAD_AFTER:
        row.dead_at = now
        logger.error(
            "GitHub outbox row %d (%s on %s %s) given up after %d refusals: %s",
            row.id,
            row.kind,
            row.repository,
            row.target,
            row.refusals,
            row.last_error,
        )
        return "dead"
    logger.warning("GitHub outbox row %d (%s) failed: %s", row.id, row.kind, row.last_error)
    return "failed"


def revive(*, session: Session, row_id: int) -> GithubOutbox:
    """Try a dead (or waiting) row again at the next flush."""
    row = session.get(GithubOutbox, row_id)
    if row is None:
        raise NotFound(f"no outbox row {row_id}")
    if row.done_at is not None:
        raise Conflict(f"outbox row {row_id} was sent already")
    row.dead_at = None
    row.refusals = 0
    row.next_attempt_at = None
    session.flush()
    return row


def _superseded(session: Session, row: GithubOutbox) -> bool:
    if row.kind is not OutboxKind.COMMENT or row.comparison_id is None:
        return False
    newer = session.scalar(
        select(GithubOutbox.id).where(
            GithubOutbox.kind == OutboxKind.COMMENT,
            GithubOutbox.comparison_id == row.comparison_id,
            GithubOutbox.done_at.is_(None),
            GithubOutbox.id > row.id,
        )
    )
    return newer is not None


def _send(*, session: Session, client: GithubClient, settings: Settings, row: GithubOutbox) -> None:
    repository = row.repository
    installation_id = row.payload.get("installation_id")
    if isinstance(installation_id, int):
        client.remember_installation(repository, installation_id)
    if row.kind is OutboxKind.REPLY:
        client.request(
            "POST",
            f"/repos/{repository}/issues/{row.target}/comments",
            repository=repository,
            json={"body": row.payload["body"]},
        )
    elif row.kind is OutboxKind.REACTION:
        client.request(
            "POST",
            f"/repos/{repository}/issues/comments/{row.target}/reactions",
            repository=repository,
            json={"content": row.payload["content"]},
        )
    elif row.kind is OutboxKind.STATUS:
        body: dict[str, Any] = {
            "state": row.payload["state"],
            "description": str(row.payload.get("description", ""))[:140],
            "context": settings.github_status_context,
        }
        link = comparison_link(settings.public_url, row.comparison_id) if row.comparison_id else None
        if link:
            body["target_url"] = link
        client.request("POST", f"/repos/{repository}/statuses/{row.target}", repository=repository, json=body)
    elif row.kind is OutboxKind.COMMENT:
        _upsert_comment(session=session, client=client, settings=settings, row=row)
    else:
        assert_never(row.kind)


def _upsert_comment(*, session: Session, client: GithubClient, settings: Settings, row: GithubOutbox) -> None:
    """Edit the comparison's comment, found by its stored id or its marker; create it when there is none."""
    if row.comparison_id is None:
        return  # the comparison was deleted: nothing to report any more
    comparison = session.get(Comparison, row.comparison_id)
    if comparison is None:
        return
    view = comparison_view(session=session, comparison_id=comparison.id)
    body = render_comment(
        view, public_url=settings.public_url, diagnoses=comparison_diagnoses(session=session, view=view)
    )
    repository = row.repository
    comment_id = comparison.github_comment_id
    if comment_id is None:
        comment_id = _find_marked(client, repository, row.target, marker(comparison.id))
    if comment_id is not None:
        try:
            client.request(
                "PATCH",
                f"/repos/{repository}/issues/comments/{comment_id}",
                repository=repository,
                json={"body": body},
            )
            comparison.github_comment_id = comment_id
            return
        except GithubError as error:
            if error.status != 404:
                raise
            # Deleted by someone: post a new one below.
    created = client.request(
        "POST",
        f"/repos/{repository}/issues/{row.target}/comments",
        repository=repository,
        json={"body": body},
    )
    comparison.github_comment_id = int(created["id"])


def _find_marked(client: GithubClient, repository: str, number: str, text: str) -> int | None:
    """The id of the PR comment that carries ``text`` (the bot's marker), looking through its pages."""
    for page in range(1, 11):
        comments = client.request(
            "GET",
            f"/repos/{repository}/issues/{number}/comments?per_page=100&page={page}",
            repository=repository,
        )
        if not comments:
            return None
        for comment in comments:
            if text in str(comment.get("body", "")):
                return int(comment["id"])
        if len(comments) < 100:
            return None
    return None
