"""Every GitHub write goes through the outbox: a row written in the transaction of the change it
reports, sent after commit by :func:`flush_outbox`, retried with exponential backoff until it
succeeds. Kinds:

- ``comment``: the comparison's one comment, created once (its id stored on the comparison) and
  edited in place afterwards; its body is rendered when sent, so it always shows the latest state
  and only the newest pending row of a comparison is sent.
- ``reply``: a new comment on a pull request (help, refusals, errors), with a hidden marker of its
  row, looked for before it is posted again after a try whose outcome is unknown (a 5xx, a timeout).
- ``reaction``: a reaction to a comment.
- ``status``: a commit status on the PR's head sha.
- ``check``: the comparison's check run on the head sha (App mode, :mod:`tracker.github.checks`),
  created once (its id stored on the comparison) and edited in place, rendered when sent.
- ``culprit``: an alert group's one comment on its culprit's pull request, like ``comment``, its id
  stored on the group (:mod:`tracker.github.culprits`); dropped when the repository turns it off.

A row GitHub refuses for good (400, 403 without a rate limit, 404, 410, 422: the PR or comment is gone,
the App lost access, the payload is invalid) three times in a row is *dead*: ``dead_at`` is set, it is
no longer tried, ``perftrack github outbox --dead`` lists it and ``perftrack github retry`` revives it.
Anything else (5xx, timeouts, bad credentials) is retried for ever, at most hourly; a rate limit is no
refusal: the row waits until GitHub's reset. GitHub is never called inside a database transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from tracker.comparisons.summary import comparison_view
from tracker.diagnosis.loading import comparison_diagnoses
from tracker.enums import OutboxKind
from tracker.errors import Conflict, NotFound
from tracker.github import checks, culprits
from tracker.github.client import GithubClient, GithubError, GithubRateLimited, client_from_settings
from tracker.github.comments import create_comment, find_marked
from tracker.github.render import comparison_link, marker, render_comment, reply_marker
from tracker.models import Comparison, GithubOutbox, utcnow
from tracker.settings import Settings

logger = logging.getLogger(__name__)

BACKOFF_FIRST_S = 60
BACKOFF_MAX_S = 3600
_ERROR_CHARS = 500
PERMANENT_STATUSES = frozenset({400, 403, 404, 410, 422})
DEAD_AFTER = 3  # refusals in a row before a row is given up
CLAIM_S = 300  # a row being sent is its sender's for this long (then it is due again)


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
    """Send the due outbox rows in order; failures are retried later.

    ``client`` defaults to the one the settings describe; without GitHub credentials nothing is sent.
    No transaction is open while GitHub is called: each row is claimed in a short transaction
    (:data:`CLAIM_S`; on PostgreSQL a row being claimed is locked and skipped by others), sent, and
    its outcome written in another. A rate limit ends the flush (every other row would meet it too)
    and reschedules the row at the time GitHub names.
    """
    client = client or client_from_settings(settings)
    if client is None:
        logger.warning("GitHub outbox: no GitHub credentials configured; nothing sent")
        return FlushReport()
    now = now or utcnow()
    started = time.monotonic()
    due = _due(session=session, now=now, limit=limit)
    session.commit()
    outcomes = {"sent": 0, "failed": 0, "superseded": 0, "dead": 0}

    def current() -> dt.datetime:  # ``now`` moved on by the time the flush has taken so far
        return now + dt.timedelta(seconds=time.monotonic() - started)

    for row_id in due:
        claimed = _claim(session=session, settings=settings, row_id=row_id, now=current())
        session.commit()
        if isinstance(claimed, str):
            outcomes[claimed] += 1
            continue
        if claimed is None:
            continue
        try:
            comment_id = _send(client=client, settings=settings, send=claimed)
        except GithubError as error:
            outcomes[_failed(session=session, row_id=row_id, error=error, now=current())] += 1
            session.commit()
            if isinstance(error, GithubRateLimited):
                break
            continue
        _sent(session=session, send=claimed, comment_id=comment_id, now=current())
        session.commit()
        outcomes["sent"] += 1
    return FlushReport(**outcomes)


def _due(*, session: Session, now: dt.datetime, limit: int) -> Sequence[int]:
    """The ids of the rows to send now, oldest first: not sent, not dead, and their backoff over."""
    return session.scalars(
        select(GithubOutbox.id).where(*_due_now(now)).order_by(GithubOutbox.id).limit(limit)
    ).all()


def _due_now(now: dt.datetime) -> tuple[ColumnElement[bool], ...]:
    return (
        GithubOutbox.done_at.is_(None),
        GithubOutbox.dead_at.is_(None),
        (GithubOutbox.next_attempt_at.is_(None)) | (GithubOutbox.next_attempt_at <= now),
    )


@dataclass(frozen=True)
class _Send:
    """What one claimed row sends, read in its claim's transaction: plain values, so that sending
    touches no database."""

    row_id: int
    kind: OutboxKind
    repository: str
    target: str
    payload: dict[str, Any]
    comparison_id: int | None
    tried_before: bool  # an earlier try failed, possibly after GitHub had carried it out
    body: str = ""  # a comment's text, with its marker
    find: str = ""  # the marker to look for before creating a comment
    comment_id: int | None = None  # the comparison's comment (or check run), when known
    check: dict[str, Any] | None = None  # a check run's body


def _claim(
    *, session: Session, settings: Settings, row_id: int, now: dt.datetime
) -> _Send | Literal["superseded", "sent"] | None:
    """Take a due row for :data:`CLAIM_S` and read what it sends; ``"superseded"`` when a newer
    update of the same comment makes it needless, ``"sent"`` when its comparison is gone (both marked
    done), ``None`` when another process has it or it is done."""
    row = session.scalar(
        select(GithubOutbox)
        .where(GithubOutbox.id == row_id, *_due_now(now))
        .with_for_update(skip_locked=True)
    )
    if row is None:
        return None
    if _superseded(session, row):
        row.last_error = "superseded by a newer update of the same comment"
        row.attempts += 1
        row.done_at = now
        return "superseded"
    send = _Send(
        row_id=row.id,
        kind=row.kind,
        repository=row.repository,
        target=row.target,
        payload=dict(row.payload),
        comparison_id=row.comparison_id,
        tried_before=row.attempts > 0 or row.next_attempt_at is not None,  # or claimed, then cut short
    )
    if row.kind is OutboxKind.REPLY:
        find = reply_marker(row.id)
        send = replace(send, body=f"{row.payload['body']}\n\n{find}", find=find)
    elif row.kind is OutboxKind.CULPRIT:
        if (told := culprits.claim(session=session, settings=settings, row=row, now=now)) is None:
            return "superseded"
        send = replace(send, body=told.body, find=told.marker, comment_id=told.comment_id)
    elif row.kind in (OutboxKind.COMMENT, OutboxKind.CHECK):
        comparison = session.get(Comparison, row.comparison_id) if row.comparison_id is not None else None
        if comparison is None:  # the comparison was deleted: nothing to report any more
            row.attempts += 1
            row.done_at = now
            return "sent"
        view = comparison_view(session=session, comparison_id=comparison.id)
        diagnoses = comparison_diagnoses(session=session, view=view)
        if row.kind is OutboxKind.CHECK:
            check = checks.check_body(view, settings=settings, diagnoses=diagnoses)
            tried = checks.maybe_created(session, comparison.id)  # this row, or one it replaces
            send = replace(send, check=check, comment_id=comparison.github_check_run_id, tried_before=tried)
        else:
            body = render_comment(view, public_url=settings.public_url, diagnoses=diagnoses)
            send = replace(
                send, body=body, find=marker(comparison.id), comment_id=comparison.github_comment_id
            )
    row.next_attempt_at = now + dt.timedelta(seconds=CLAIM_S)
    return send


def _sent(*, session: Session, send: _Send, comment_id: int | None, now: dt.datetime) -> None:
    """Write down that a row was sent (and the comparison's comment id)."""
    row = session.get(GithubOutbox, send.row_id)
    if row is not None:
        row.attempts += 1
        row.done_at = now
    if comment_id is not None and send.kind is OutboxKind.CULPRIT:
        culprits.remember_comment(session=session, payload=send.payload, comment_id=comment_id)
    elif comment_id is not None and send.comparison_id is not None:
        comparison = session.get(Comparison, send.comparison_id)
        if comparison is not None and send.kind is OutboxKind.CHECK:
            comparison.github_check_run_id = comment_id
        elif comparison is not None:
            comparison.github_comment_id = comment_id


def _failed(
    *, session: Session, row_id: int, error: GithubError, now: dt.datetime
) -> Literal["failed", "dead"]:
    """Count a failed send and set the next attempt: at the end of a rate limit, else after a backoff
    from ``now`` (when GitHub answered); dead after :data:`DEAD_AFTER` refusals in a row (a rate
    limit is no refusal)."""
    row = session.get(GithubOutbox, row_id)
    if row is None:
        return "failed"
    row.attempts += 1
    row.last_error = str(error)[:_ERROR_CHARS]
    if isinstance(error, GithubRateLimited):
        row.next_attempt_at = max(error.retry_at, now)
        logger.warning("GitHub outbox row %d (%s) rate limited: %s", row.id, row.kind, row.last_error)
        return "failed"
    refused = error.status in PERMANENT_STATUSES
    row.refusals = row.refusals + 1 if refused else 0
    row.next_attempt_at = now + backoff(row.attempts)
    if row.refusals >= DEAD_AFTER:
        row.dead_at = now
        what = (row.id, row.kind, row.repository, row.target, row.refusals, row.last_error)
        logger.error("GitHub outbox row %d (%s on %s %s) given up after %d refusals: %s", *what)
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
    if row.kind is OutboxKind.CULPRIT:
        return culprits.superseded(session, row)
    if row.kind not in (OutboxKind.COMMENT, OutboxKind.CHECK) or row.comparison_id is None:
        return False
    newer = session.scalar(
        select(GithubOutbox.id).where(
            GithubOutbox.kind == row.kind,
            GithubOutbox.comparison_id == row.comparison_id,
            GithubOutbox.done_at.is_(None),
            GithubOutbox.id > row.id,
        )
    )
    return newer is not None


def _send(*, client: GithubClient, settings: Settings, send: _Send) -> int | None:
    """Make the row's GitHub call; the id of the comparison's comment (check run) for a ``comment``
    (``check``) row. A check row in token mode is dropped: GitHub's Checks need an App."""
    repository = send.repository
    installation_id = send.payload.get("installation_id")
    if isinstance(installation_id, int):
        client.remember_installation(repository, installation_id)
    if send.kind is OutboxKind.REPLY:
        # After a try whose outcome is unknown (a 5xx, a timeout) the reply may be there already.
        if not send.tried_before or find_marked(client, repository, send.target, send.find) is None:
            create_comment(client, repository, send.target, send.body)
    elif send.kind is OutboxKind.REACTION:
        client.request(
            "POST",
            f"/repos/{repository}/issues/comments/{send.target}/reactions",
            repository=repository,
            json={"content": send.payload["content"]},
        )
    elif send.kind is OutboxKind.STATUS:
        body: dict[str, Any] = {
            "state": send.payload["state"],
            "description": str(send.payload.get("description", ""))[:140],
            "context": settings.github_status_context,
        }
        link = comparison_link(settings.public_url, send.comparison_id) if send.comparison_id else None
        if link:
            body["target_url"] = link
        client.request(
            "POST", f"/repos/{repository}/statuses/{send.target}", repository=repository, json=body
        )
    elif send.kind in (OutboxKind.COMMENT, OutboxKind.CULPRIT):
        return _upsert_comment(client=client, send=send)
    elif send.kind is OutboxKind.CHECK:
        if send.check is None or not client.is_app:
            return None
        known = send.comment_id
        return checks.send_check(client, repository, send.target, known, send.check, send.tried_before)
    else:
        assert_never(send.kind)
    return None


def _upsert_comment(*, client: GithubClient, send: _Send) -> int:
    """Edit the comparison's comment, found by its stored id or its marker (also after a creation
    whose answer was lost); create it when there is none. Its id."""
    repository = send.repository
    comment_id = send.comment_id
    if comment_id is None:
        comment_id = find_marked(client, repository, send.target, send.find)
    if comment_id is not None:
        try:
            client.request(
                "PATCH",
                f"/repos/{repository}/issues/comments/{comment_id}",
                repository=repository,
                json={"body": send.body},
            )
            return comment_id
        except GithubError as error:
            if error.status != 404:
                raise
            # Deleted by someone: post a new one below.
    return create_comment(client, repository, send.target, send.body)
