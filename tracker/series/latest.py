"""``series_latest``: every series' newest points and last nightly run (:mod:`tracker.series.points`),
kept as runs are stored, so that the overview reads one row a series.

* :func:`note_stored_runs`: ingest calls it with the runs it has just stored. Each series' row is
  locked, the new runs are merged into it, and it is written back: concurrent uploads to one series
  wait for each other instead of overwriting each other. A row it creates is read from ``runs``.
* :func:`refresh_series`: a series' row read again from its runs (after a run of it was excluded).
* :func:`rebuild_series_latest`: every row from ``runs``, after a bulk load that went around ingest.
* :func:`read_current_latest`: what the overview reads; a series whose row is missing, or whose
  points' commit times have changed since, is computed from ``runs`` instead.

A point keeps its commit's time as it was when the point was stored. A commit's estimated time is
replaced once an upload brings the real one (:func:`tracker.vcs.commits.record_commit`), which
reorders every series with a run of that commit: the kept time then no longer matches, and that
series is read from its runs until its row is written again (a write then reads it from runs too).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, delete, insert, select, tuple_, update
from sqlalchemy.orm import Session

from tracker import db
from tracker.enums import RunStatus
from tracker.models import Case, Commit, Run, SeriesLatest
from tracker.series.points import (
    EMPTY,
    NightlyRun,
    SeriesKey,
    SeriesLatestValues,
    SeriesPoint,
    latest_from_runs,
    merged,
    stamp,
    stored_runs,
    unchanged_commit_times,
)

WRITTEN = ("points", "nightly_run_id", "nightly_status", "nightly_at")  # the columns a write sets


@dataclass(frozen=True)
class CommitRef:
    """What a page shows of a point's commit."""

    sha: str
    committed_at: dt.datetime


@dataclass(frozen=True)
class SeriesSummary:
    """What a page shows of a series' newest points: the newest one, every value (newest first),
    and the last nightly run."""

    head: SeriesPoint | None = None
    values_ms: tuple[float, ...] = ()
    nightly: NightlyRun | None = None

    @classmethod
    def of(cls, values: SeriesLatestValues) -> SeriesSummary:
        """The summary of ``values``."""
        points = values.points
        return cls(points[0] if points else None, tuple(point.value_ms for point in points), values.nightly)


@dataclass(frozen=True)
class LatestReads:
    """What pages show of the series read, and the commits of their newest points by id."""

    series: dict[SeriesKey, SeriesSummary]
    commits: dict[int, CommitRef]


def note_stored_runs(*, session: Session, run_ids: Collection[int]) -> None:
    """Merge runs just stored (flushed, in this transaction) into their series' rows."""
    if not run_ids:
        return
    stored: dict[SeriesKey, list[Any]] = {}
    session.flush()
    for row in session.connection().execute(stored_runs(), {"run_ids": sorted(run_ids)}):
        stored.setdefault((row.case_id, row.hardware_kind_id), []).append(row)
    keys = sorted(stored)
    created, kept = _lock(session, keys)
    times = _commit_times(session, {point.commit_id for values in kept.values() for point in values.points})
    again = created | {
        key for key, values in kept.items() if not unchanged_commit_times(values.points, times)
    }
    values = latest_from_runs(session=session, keys=again) if again else {}
    _write(
        session,
        {key: values.get(key, EMPTY) if key in again else merged(kept[key], stored[key]) for key in keys},
    )


def refresh_series(*, session: Session, keys: Collection[SeriesKey]) -> None:
    """Read these series' rows again from their runs (after one of their runs was excluded)."""
    ordered = sorted(set(keys))
    if not ordered:
        return
    session.flush()
    _lock(session, ordered)
    values = latest_from_runs(session=session, keys=ordered)
    _write(session, {key: values.get(key, EMPTY) for key in ordered})


def rebuild_series_latest(*, session: Session) -> None:
    """Every series' row from ``runs`` (after a bulk load that bypassed ingest)."""
    session.execute(delete(SeriesLatest))
    keys = [
        (row.case_id, row.hardware_kind_id)
        for row in session.execute(select(Run.case_id, Run.hardware_kind_id).distinct())
    ]
    values = latest_from_runs(session=session, keys=None)
    rows = [_row(key, values.get(key, EMPTY)) for key in keys]
    if rows:
        session.execute(insert(SeriesLatest), rows)


def read_current_latest(*, session: Session, expected: Collection[SeriesKey]) -> LatestReads:
    """The rows of current cases' series; ``expected`` series with no row, or an out-of-date one,
    are computed from their runs instead (nothing is written).

    Only what a page shows is decoded (a row's newest point, its values): the overview reads some
    5,000 points a request, and decoding each into a :class:`SeriesPoint` was half its time.
    """
    rows = session.execute(
        select(*_columns()).join(Case, Case.id == SeriesLatest.case_id).where(Case.is_current.is_(True))
    ).all()
    commits = _commits(session, {entry[1] for row in rows for entry in row.points})
    stamps = {commit_id: stamp(commit.committed_at) for commit_id, commit in commits.items()}
    series: dict[SeriesKey, SeriesSummary] = {}
    again = set(expected)
    for row in rows:
        key = (row.case_id, row.hardware_kind_id)
        if all(stamps.get(commit_id) == kept for _, commit_id, kept, *_ in row.points):
            series[key] = _summary(row)
            again.discard(key)
        else:
            again.add(key)  # a point's commit time changed since: the order may have too
    if again:
        recomputed = latest_from_runs(session=session, keys=again)
        series.update({key: SeriesSummary.of(recomputed.get(key, EMPTY)) for key in again})
        missing = {point.commit_id for key in again for point in recomputed.get(key, EMPTY).points}
        missing -= commits.keys()
        commits.update(_commits(session, missing) if missing else {})
    return LatestReads(series=series, commits=commits)


def _lock(
    session: Session, keys: Sequence[SeriesKey]
) -> tuple[set[SeriesKey], dict[SeriesKey, SeriesLatestValues]]:
    """Create the rows not there yet and lock the others, in key order: the keys created, and the
    others' values as last committed (a concurrent writer of one of them is waited for)."""
    connection = session.connection()
    key_columns = [SeriesLatest.case_id, SeriesLatest.hardware_kind_id]
    creating = db.upsert_insert(session, SeriesLatest).on_conflict_do_nothing(index_elements=key_columns)
    created: set[SeriesKey] = {
        (row.case_id, row.hardware_kind_id)
        for row in connection.execute(
            creating.returning(*key_columns),
            [{"case_id": case_id, "hardware_kind_id": kind_id, "points": []} for case_id, kind_id in keys],
        )
    }
    existing = [key for key in keys if key not in created]
    if not existing:
        return created, {}
    rows = connection.execute(_locking(), {"keys": existing})
    return created, {(row.case_id, row.hardware_kind_id): _values(row) for row in rows}


@cache
def _locking() -> Select[Any]:
    """The rows of ``:keys``, locked in key order (statements are built once: ingest runs them a lot)."""
    return (
        select(*_columns())
        .where(
            tuple_(SeriesLatest.case_id, SeriesLatest.hardware_kind_id).in_(bindparam("keys", expanding=True))
        )
        .order_by(SeriesLatest.case_id, SeriesLatest.hardware_kind_id)
        .with_for_update()
    )


@cache
def _writing() -> Any:
    """``UPDATE`` of one row by its key, executed once a row."""
    return (
        update(SeriesLatest)
        .where(
            SeriesLatest.case_id == bindparam("key_case"),
            SeriesLatest.hardware_kind_id == bindparam("key_kind"),
        )
        .values({column: bindparam(f"new_{column}") for column in WRITTEN})
    )


def _write(session: Session, values: Mapping[SeriesKey, SeriesLatestValues]) -> None:
    """Write the locked rows of ``values``."""
    rows = [_row(key, latest) for key, latest in values.items()]
    session.connection().execute(
        _writing(),
        [
            {"key_case": row["case_id"], "key_kind": row["hardware_kind_id"]}
            | {f"new_{column}": row[column] for column in WRITTEN}
            for row in rows
        ],
    )


def _row(key: SeriesKey, values: SeriesLatestValues) -> dict[str, Any]:
    """The ``series_latest`` row of ``values``, as column name → value."""
    nightly = values.nightly
    return {
        "case_id": key[0],
        "hardware_kind_id": key[1],
        "points": [_encoded(point) for point in values.points],
        "nightly_run_id": nightly.run_id if nightly else None,
        "nightly_status": nightly.status if nightly else None,
        "nightly_at": nightly.at if nightly else None,
    }


def _encoded(point: SeriesPoint) -> list[Any]:
    """A point as its ``points`` entry: run id, commit id, commit time (:func:`stamp`), value, basis."""
    return [point.run_id, point.commit_id, stamp(point.committed_at), point.value_ms, point.basis]


def _columns() -> tuple[Any, ...]:
    return (
        SeriesLatest.case_id,
        SeriesLatest.hardware_kind_id,
        SeriesLatest.points,
        SeriesLatest.nightly_run_id,
        SeriesLatest.nightly_status,
        SeriesLatest.nightly_at,
    )


def _values(row: Any) -> SeriesLatestValues:
    """The values of a ``series_latest`` row (of :func:`_columns`)."""
    return SeriesLatestValues(points=tuple(_decoded(entry) for entry in row.points), nightly=_nightly(row))


def _summary(row: Any) -> SeriesSummary:
    """What a page shows of a ``series_latest`` row (of :func:`_columns`), decoding one point."""
    entries = row.points
    head = _decoded(entries[0]) if entries else None
    return SeriesSummary(head, tuple(entry[3] for entry in entries), _nightly(row))


def _decoded(entry: list[Any]) -> SeriesPoint:
    run_id, commit_id, committed_at, value_ms, basis = entry
    return SeriesPoint(run_id, commit_id, dt.datetime.fromisoformat(committed_at), value_ms, basis)


def _nightly(row: Any) -> NightlyRun | None:
    if row.nightly_run_id is None:
        return None
    return NightlyRun(run_id=row.nightly_run_id, status=RunStatus(row.nightly_status), at=row.nightly_at)


def _commit_times(session: Session, commit_ids: Collection[int]) -> dict[int, dt.datetime]:
    if not commit_ids:
        return {}
    rows = session.connection().execute(_timing(), {"ids": sorted(commit_ids)})
    return {row.id: row.committed_at for row in rows}


@cache
def _timing() -> Select[int, dt.datetime]:
    """The times of the commits ``:ids``."""
    return select(Commit.id, Commit.committed_at).where(Commit.id.in_(bindparam("ids", expanding=True)))


def _commits(session: Session, commit_ids: Collection[int]) -> dict[int, CommitRef]:
    """The commits of ``commit_ids`` (one query, also for none: a page's query count stays the same)."""
    rows = session.execute(
        select(Commit.id, Commit.sha, Commit.committed_at).where(Commit.id.in_(sorted(commit_ids)))
    )
    return {row.id: CommitRef(sha=row.sha, committed_at=row.committed_at) for row in rows}


__all__ = [
    "CommitRef",
    "LatestReads",
    "SeriesSummary",
    "note_stored_runs",
    "read_current_latest",
    "rebuild_series_latest",
    "refresh_series",
]
