"""A series' newest points and its last nightly run: the values, how new runs merge into them, and
how they are computed from ``runs``.

A *series point* is a successful run with a value of record, not excluded (flagged or refuted), of
a plain commit outside comparisons: what the overview's sparkline and baseline are made of, newest
commit first (then newest run). The *last nightly run* is the newest run of a nightly job, whatever
its outcome, by when it ran (``measured_at``, else when it was stored).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, ColumnExpressionArgument, Select, and_, bindparam, func, select, tuple_
from sqlalchemy.orm import Session

from tracker.enums import JobReason, RunStatus
from tracker.models import Candidate, Commit, Job, Run

LATEST_POINTS = 20  # points kept a series: the overview's sparkline, and the five runs of its baseline
SeriesKey = tuple[int, int]  # (case id, hardware kind id)


class SeriesPoint(NamedTuple):
    """One series point: its run, its commit (and that commit's time when stored), its value.

    (A named tuple: the overview reads some 5,000 of them a request.)
    """

    run_id: int
    commit_id: int
    committed_at: dt.datetime
    value_ms: float
    basis: str | None


@dataclass(frozen=True)
class NightlyRun:
    """The last nightly run of a series: which run, how it ended, when it ran (UTC)."""

    run_id: int
    status: RunStatus
    at: dt.datetime


@dataclass(frozen=True)
class SeriesLatestValues:
    """A series' newest points (newest first, at most :data:`LATEST_POINTS`) and last nightly run."""

    points: tuple[SeriesPoint, ...] = ()
    nightly: NightlyRun | None = None


EMPTY = SeriesLatestValues()  # a series with no point and no nightly run


def stamp(moment: dt.datetime) -> str:
    """A commit time as a stored point keeps it: ISO 8601 in UTC (one spelling per instant)."""
    return moment.astimezone(dt.UTC).isoformat()


def merge_points(kept: Iterable[SeriesPoint], new: Iterable[SeriesPoint]) -> tuple[SeriesPoint, ...]:
    """The newest :data:`LATEST_POINTS` of ``kept`` and ``new`` (a run in both counts once), newest first."""
    by_run = {point.run_id: point for point in (*kept, *new)}
    ordered = sorted(by_run.values(), key=lambda point: (point.committed_at, point.run_id), reverse=True)
    return tuple(ordered[:LATEST_POINTS])


def newer_nightly(kept: NightlyRun | None, new: NightlyRun | None) -> NightlyRun | None:
    """The later of two nightly runs by when they ran, then by run id."""
    if kept is None or new is None:
        return kept or new
    return max(kept, new, key=lambda run: (run.at, run.run_id))


def unchanged_commit_times(points: Iterable[SeriesPoint], times: Mapping[int, dt.datetime]) -> bool:
    """Whether every point's commit still has the time the point was stored with."""
    return all(times.get(point.commit_id) == point.committed_at for point in points)


def merged(kept: SeriesLatestValues, stored: Iterable[Any]) -> SeriesLatestValues:
    """``kept`` with runs just stored (rows of :func:`stored_runs`) merged in."""
    rows = list(stored)
    nightly = None
    for row in rows:
        if row.reason == JobReason.NIGHTLY:
            nightly = newer_nightly(nightly, _nightly(row))
    return SeriesLatestValues(
        points=merge_points(kept.points, (_point(row) for row in rows if row.is_point)),
        nightly=newer_nightly(kept.nightly, nightly),
    )


def latest_from_runs(
    *, session: Session, keys: Collection[SeriesKey] | None
) -> dict[SeriesKey, SeriesLatestValues]:
    """The latest values of the series ``keys`` (``None``: all), computed from ``runs``.

    Series with neither a point nor a nightly run are left out.
    """
    points: dict[SeriesKey, list[SeriesPoint]] = {}
    for row in session.execute(_ranked_points(keys)):
        points.setdefault((row.case_id, row.hardware_kind_id), []).append(_point(row))
    nightly = {
        (row.case_id, row.hardware_kind_id): _nightly(row) for row in session.execute(_ranked_nightly(keys))
    }
    return {
        key: SeriesLatestValues(points=tuple(points.get(key, ())), nightly=nightly.get(key))
        for key in points.keys() | nightly.keys()
    }


def point_conditions() -> tuple[ColumnExpressionArgument[bool], ...]:
    """What makes a run a series point (with ``candidates`` joined and ``jobs`` outer-joined)."""
    return (
        Run.status == RunStatus.OK,
        Run.denoise_step_ms.is_not(None),
        Run.excluded_reason.is_(None),
        Candidate.is_plain,
        Job.comparison_id.is_(None),
    )


@cache
def stored_runs() -> Select[Any]:
    """What merging needs of the stored runs ``:run_ids``: their series, whether each is a point,
    its nightly facts (built once: ingest runs it for every run)."""
    return (
        select(
            *_point_columns(),
            Run.status,
            Run.measured_at,
            Run.created_at,
            Job.reason,
            and_(*point_conditions()).label("is_point"),
        )
        .join(Commit, Commit.id == Run.commit_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(Run.id.in_(bindparam("run_ids", expanding=True)))
    )


def _point_columns() -> tuple[Any, ...]:
    return (
        Run.id,
        Run.case_id,
        Run.hardware_kind_id,
        Run.commit_id,
        Commit.committed_at,
        Run.denoise_step_ms,
        Run.denoise_step_basis,
    )


def _in_series(keys: Collection[SeriesKey] | None) -> list[ColumnElement[bool]]:
    if keys is None:
        return []
    return [tuple_(Run.case_id, Run.hardware_kind_id).in_(sorted(keys))]


def _ranked_points(keys: Collection[SeriesKey] | None) -> Select[Any]:
    rank = func.row_number().over(
        partition_by=(Run.case_id, Run.hardware_kind_id), order_by=(Commit.committed_at.desc(), Run.id.desc())
    )
    ranked = (
        select(*_point_columns(), rank.label("rank"))
        .join(Commit, Commit.id == Run.commit_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(*point_conditions(), *_in_series(keys))
        .subquery()
    )
    return select(ranked).where(ranked.c.rank <= LATEST_POINTS).order_by(ranked.c.rank)


def _ranked_nightly(keys: Collection[SeriesKey] | None) -> Select[Any]:
    at = func.coalesce(Run.measured_at, Run.created_at)
    rank = func.row_number().over(
        partition_by=(Run.case_id, Run.hardware_kind_id), order_by=(at.desc(), Run.id.desc())
    )
    ranked = (
        select(
            Run.id,
            Run.case_id,
            Run.hardware_kind_id,
            Run.status,
            Run.measured_at,
            Run.created_at,
            rank.label("rank"),
        )
        .join(Job, Job.id == Run.job_id)
        .where(Job.reason == JobReason.NIGHTLY, *_in_series(keys))
        .subquery()
    )
    return select(ranked).where(ranked.c.rank == 1)


def _point(row: Any) -> SeriesPoint:
    return SeriesPoint(
        run_id=row.id,
        commit_id=row.commit_id,
        committed_at=row.committed_at,
        value_ms=float(row.denoise_step_ms),
        basis=row.denoise_step_basis,
    )


def _nightly(row: Any) -> NightlyRun:
    return NightlyRun(run_id=row.id, status=RunStatus(row.status), at=row.measured_at or row.created_at)
