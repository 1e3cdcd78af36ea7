"""A series: the runs of one case on one hardware kind, one metric's values in commit order, each
with its change vs the previous. Also the metrics a series can show, their columns and units."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, ColumnExpressionArgument, func, select
from sqlalchemy.orm import Session

from tracker.catalog.cases import get_hardware_kind
from tracker.enums import Metric, RunStatus
from tracker.errors import InvalidInput, NotFound
from tracker.models import Candidate, Case, Commit, HardwareKind, Job, Run
from tracker.statistics.steps import change_pct

METRIC_COLUMNS: dict[Metric, ColumnElement[float] | ColumnElement[int]] = {
    Metric.DENOISE_STEP_MS: Run.denoise_step_ms,  # type: ignore[dict-item]
    Metric.DENOISE_STAGE_MS: Run.denoise_stage_ms,  # type: ignore[dict-item]
    Metric.E2E_MS: Run.e2e_ms,  # type: ignore[dict-item]
    Metric.PEAK_MEMORY_MB: Run.peak_memory_mb,  # type: ignore[dict-item]
    Metric.GRAPH_BREAKS: Run.graph_breaks,  # type: ignore[dict-item]
}
METRIC_UNITS: dict[Metric, str] = {
    Metric.DENOISE_STEP_MS: "ms",
    Metric.DENOISE_STAGE_MS: "ms",
    Metric.E2E_MS: "ms",
    Metric.PEAK_MEMORY_MB: "MiB",
    Metric.GRAPH_BREAKS: "",
}


def parse_metric(value: str) -> Metric:
    """The metric named ``value``, or :class:`InvalidInput` listing the valid ones."""
    metric = next((metric for metric in METRIC_COLUMNS if metric.value == value), None)
    if metric is None:  # ``output`` is an alert's metric, not a number a series charts
        valid = ", ".join(metric.value for metric in METRIC_COLUMNS)
        raise InvalidInput("metric", f"unknown metric {value!r}; valid: {valid}")
    return metric


@dataclass(frozen=True)
class SeriesPoint:
    """One run of a series, in commit order."""

    run_id: int
    status: str
    value: float | None
    basis: str | None
    commit_sha: str
    commit_title: str
    commit_author: str
    committed_at: dt.datetime
    committed_at_estimated: bool
    candidate_id: int
    failure_reason: str | None
    change_pct: float | None
    kind: str = "import"
    iqr: float | None = None
    excluded_reason: str | None = None


@dataclass(frozen=True)
class Series:
    """A case × hardware × metric series."""

    case: Case
    hardware: str
    metric: Metric
    unit: str
    threshold_pct: float
    points: list[SeriesPoint]
    total: int


def series(
    *,
    session: Session,
    case_slug: str,
    hardware: str,
    metric: Metric = Metric.DENOISE_STEP_MS,
    limit: int = 500,
) -> Series:
    """The newest ``limit`` runs of a series in commit order, each with its change vs the previous."""
    case = session.scalar(select(Case).where(Case.slug == case_slug, Case.is_current.is_(True)))
    if case is None:
        raise NotFound(f"no case {case_slug!r}")
    kind = get_hardware_kind(session=session, name=hardware)
    where = _series_runs(case, kind)
    total = _count_runs(session, where)
    rows = _newest_rows(session, where, METRIC_COLUMNS[metric], limit)
    return Series(
        case=case,
        hardware=kind.name,
        metric=metric,
        unit=METRIC_UNITS[metric],
        threshold_pct=case.threshold_for(kind.name),
        points=_points(rows, metric, limit),
        total=total,
    )


def _series_runs(case: Case, kind: HardwareKind) -> tuple[ColumnExpressionArgument[bool], ...]:
    """The runs of a series.

    A series follows the branch: runs of plain commits. Stacked-patch candidates (PR A/B, carried
    fixes on a base) measure something else and are shown apart, and comparison rounds (A/B, A/A)
    with their comparison.
    """
    return (
        Run.case_id == case.id,
        Run.hardware_kind_id == kind.id,
        Candidate.is_plain,
        Job.comparison_id.is_(None),
    )


def _count_runs(session: Session, where: tuple[ColumnExpressionArgument[bool], ...]) -> int:
    """How many runs the series has in all."""
    total = session.scalar(
        select(func.count())
        .select_from(Run)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(*where)
    )
    return total or 0


def _newest_rows(
    session: Session,
    where: tuple[ColumnExpressionArgument[bool], ...],
    column: ColumnElement[float] | ColumnElement[int],
    limit: int,
) -> list[Any]:
    """The newest ``limit + 1`` runs of the series with ``column`` as their value, oldest first:
    one run more than shown, as the first shown point's change needs its predecessor."""
    query = (
        select(
            Run.id,
            Run.status,
            column.label("value"),
            Run.denoise_step_basis,
            Run.candidate_id,
            Run.failure_reason,
            Run.excluded_reason,
            Run.source,
            Run.denoise_step_iqr_ms,
            Job.reason,
            Commit.sha,
            Commit.title,
            Commit.author_name,
            Commit.committed_at,
            Commit.committed_at_estimated,
        )
        .join(Commit, Commit.id == Run.commit_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(*where)
        .order_by(Commit.committed_at.desc(), Run.id.desc())
        .limit(limit + 1)
    )
    return list(reversed(session.execute(query).all()))


def _points(rows: list[Any], metric: Metric, limit: int) -> list[SeriesPoint]:
    """The series points of ``rows`` (oldest first), each with its change vs the previous included
    value; a row beyond ``limit`` only seeds the first change."""
    previous: float | None = None
    if len(rows) > limit:
        seed, rows = rows[0], rows[1:]
        previous = _value_of(seed.value, seed.status) if seed.excluded_reason is None else None
    points: list[SeriesPoint] = []
    for row in rows:
        point = _point(row, metric, previous)
        points.append(point)
        if point.value is not None and row.excluded_reason is None:
            previous = point.value
    return points


def _point(row: Any, metric: Metric, previous: float | None) -> SeriesPoint:
    """One series point; its change is against ``previous``, the value before it."""
    value = _value_of(row.value, row.status)
    step_metric = metric is Metric.DENOISE_STEP_MS
    return SeriesPoint(
        run_id=row.id,
        status=str(row.status),
        value=value,
        basis=row.denoise_step_basis if step_metric else None,
        commit_sha=row.sha,
        commit_title=row.title,
        commit_author=row.author_name,
        committed_at=row.committed_at,
        committed_at_estimated=row.committed_at_estimated,
        candidate_id=row.candidate_id,
        failure_reason=row.failure_reason,
        change_pct=change_pct(previous, value) if previous is not None and value is not None else None,
        kind=str(row.reason) if row.reason is not None else str(row.source),
        iqr=row.denoise_step_iqr_ms if step_metric else None,
        excluded_reason=row.excluded_reason,
    )


def _value_of(value: float | int | None, status: RunStatus) -> float | None:
    """A series value: only successful runs have one."""
    return float(value) if value is not None and status == RunStatus.OK else None


__all__ = [
    "METRIC_COLUMNS",
    "METRIC_UNITS",
    "Series",
    "SeriesPoint",
    "parse_metric",
    "series",
]
