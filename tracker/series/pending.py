"""Deferred detection: an upload marks its series, the scheduler evaluates each marked series once.

Inline detection (the default) evaluates a series inside every upload that adds a point to it: the
alert exists when the upload returns, and an upload costs a series evaluation (tens of ms at a year
of history). With ``detection_deferred``, an upload only marks the series (``pending_evaluations``,
one row per series however many runs arrive) and the leading scheduler evaluates the marked series
every few seconds: uploads cost what storing costs, and a burst of results on one series is
evaluated once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from tracker import db
from tracker.models import Alert, Case, HardwareKind, PendingEvaluation

Evaluate = Callable[[Case, HardwareKind], list[Alert]]


def mark_pending(*, session: Session, case_id: int, hardware_kind_id: int, now: dt.datetime) -> None:
    """Note that a series has new points (a no-op when it is marked already)."""
    mark_all_pending(session=session, series=[(case_id, hardware_kind_id)], now=now)


def mark_all_pending(*, session: Session, series: Iterable[tuple[int, int]], now: dt.datetime) -> None:
    """Mark every ``(case_id, hardware_kind_id)`` series in one statement (those marked already keep
    their mark and its time)."""
    marks = sorted(set(series))
    if not marks:
        return
    statement = (
        db.upsert_insert(session, PendingEvaluation)
        .values(
            [
                {"case_id": case_id, "hardware_kind_id": kind_id, "queued_at": now}
                for case_id, kind_id in marks
            ]
        )
        .on_conflict_do_nothing()
    )
    session.execute(statement)


def pending_count(*, session: Session) -> int:
    """How many series wait for an evaluation."""
    return int(session.scalar(select(func.count()).select_from(PendingEvaluation)) or 0)


def evaluate_pending(*, session: Session, evaluate: Evaluate, limit: int = 1000) -> list[Alert]:
    """Evaluate the marked series, oldest mark first, and clear their marks; the alerts touched.

    On PostgreSQL the marks taken are locked (``SKIP LOCKED``), so two callers never evaluate the same
    series at once; a series marked again while it is evaluated keeps its new mark for the next pass.
    """
    marks = session.scalars(
        select(PendingEvaluation)
        .order_by(PendingEvaluation.queued_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    touched: list[Alert] = []
    for mark in marks:
        session.execute(
            delete(PendingEvaluation).where(
                PendingEvaluation.case_id == mark.case_id,
                PendingEvaluation.hardware_kind_id == mark.hardware_kind_id,
            )
        )
        case = session.get(Case, mark.case_id)
        kind = session.get(HardwareKind, mark.hardware_kind_id)
        if case is None or kind is None or not case.is_current:
            continue
        touched.extend(evaluate(case, kind))
    session.flush()
    return touched
