"""Bisections whose range must come from git: listed outside any transaction, then started.

:func:`tracker.detection.bisection.start_bisection` leaves an alert ``queued`` when the commits
between its last good and first bad commits are not stored. Cloning or fetching a mirror can take
minutes, and on SQLite a write transaction holds the database's one write lock, so here no session
is open while git runs: the queued ranges are read, each is listed with :class:`GitHistory`, and
each bisection starts in its own short write transaction. The web layer runs this after answering
an upload, a claim or a request for a bisection; the scheduler runs it too, for what is left.

One lister at a time: a range is taken (``bisection_listing_since``) in a short transaction before
git runs, so the follow-ups of several uploads and the scheduler, in one process or several, never
clone the same repository side by side. A take older than :data:`LISTING_LEASE` (its process died)
is taken again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.detection.bisection import cannot_list, start_bisection
from tracker.detection.group_notices import tell_group
from tracker.enums import BisectionState
from tracker.models import Alert, Repository, utcnow
from tracker.vcs.history import GitHistory, HistoryUnavailable
from tracker.workflows.evidence import queue_culprit_evidence
from tracker.workflows.group_news import diagnosis_notes
from wire import CommitIn

NO_HISTORY = "the tracker has no git history configured for bisection"
# Longer than a clone of a large repository may take (GitHistory's timeout is 300 s).
LISTING_LEASE = dt.timedelta(minutes=15)


@dataclass(frozen=True)
class QueuedRange:
    """One queued bisection's range, read in a session that is closed before git runs."""

    alert_id: int
    repository: Repository  # detached: its name and url are loaded
    good_sha: str
    bad_sha: str


def take_queued_ranges(*, session: Session, now: dt.datetime, limit: int = 20) -> list[QueuedRange]:
    """Take the oldest queued bisections nobody is listing (or whose lister went quiet)."""
    alerts = session.scalars(
        select(Alert)
        .where(
            Alert.bisection_state == BisectionState.QUEUED,
            or_(Alert.bisection_listing_since.is_(None), Alert.bisection_listing_since < now - LISTING_LEASE),
        )
        .order_by(Alert.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    ranges = []
    for alert in alerts:
        good, bad = alert.last_good_commit, alert.first_bad_commit
        if good is None:
            continue  # start_bisection never queues these
        alert.bisection_listing_since = now
        repository = bad.repository
        _ = (repository.name, repository.url)  # loaded now, read after the session closes
        ranges.append(QueuedRange(alert.id, repository, good.sha, bad.sha))
    session.flush()
    return ranges


def list_range(history: GitHistory | None, queued: QueuedRange) -> Sequence[CommitIn] | str:
    """The first-parent commits after the good one up to the bad one, or why they cannot be listed."""
    if history is None:
        return NO_HISTORY
    try:
        return history.first_parent_range(queued.repository, queued.good_sha, queued.bad_sha)
    except HistoryUnavailable as error:
        return f"cannot list the commits between: {error}"


def begin(
    *, session: Session, queued: QueuedRange, listed: Sequence[CommitIn] | str, now: dt.datetime
) -> Alert | None:
    """Start the bisection with its listed range, or mark it unavailable with the reason.

    The alert is read locked (PostgreSQL), so two callers that listed the same range start it once.
    """
    alert = session.get(Alert, queued.alert_id, with_for_update=True)
    if alert is None or alert.bisection_state is not BisectionState.QUEUED:
        return None
    alert.bisection_listing_since = None
    if isinstance(listed, str):
        cannot_list(alert=alert, reason=listed, now=now)
    else:
        start_bisection(session=session, alert=alert, now=now, listed=listed)
        queue_culprit_evidence(session=session, alert=alert)  # adjacent once listed: named at once
        tell_group(session=session, group=alert.group, now=now, describe=diagnosis_notes(session))
    session.flush()
    return alert


def start_queued(
    *,
    sessions: sessionmaker[Session],
    history: GitHistory | None,
    clock: Callable[[], dt.datetime] = utcnow,
    limit: int = 20,
) -> int:
    """Take the queued ranges, list them with no session open, start each in its own transaction;
    returns how many started (or were found unavailable)."""
    with db.session_scope(sessions) as session:
        ranges = take_queued_ranges(session=session, now=clock(), limit=limit)
    started = 0
    for queued in ranges:
        listed = list_range(history, queued)
        with db.session_scope(sessions) as session:
            if begin(session=session, queued=queued, listed=listed, now=clock()) is not None:
                started += 1
    return started
