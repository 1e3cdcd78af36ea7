"""Read models for the API and pages: overview, series, runs. Never loads step vectors or logs
for more than one run."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session, selectinload

from tracker.catalog import get_hardware_kind
from tracker.errors import InvalidInput, NotFound
from tracker.models import Candidate, Case, Commit, HardwareKind, Job, Metric, Run, RunStatus
from tracker.models.enums import enum_values
from tracker.stats import change_pct

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
    try:
        return Metric(value)
    except ValueError:
        raise InvalidInput(
            "metric", f"unknown metric {value!r}; valid: {', '.join(enum_values(Metric))}"
        ) from None


@dataclass(frozen=True)
class OverviewRow:
    """One case on one hardware kind: its latest value of record and how many runs it has."""

    case_slug: str
    case_title: str
    model: str
    family: str
    suite: str
    hardware: str
    threshold_pct: float
    run_count: int
    failed_count: int
    latest_run_id: int | None
    latest_value_ms: float | None
    latest_basis: str | None
    latest_commit_sha: str | None
    latest_committed_at: dt.datetime | None
    previous_value_ms: float | None

    @property
    def change_pct(self) -> float | None:
        """Latest value vs the one before it, in percent."""
        if self.latest_value_ms is None or self.previous_value_ms is None:
            return None
        return change_pct(self.previous_value_ms, self.latest_value_ms)


def overview(*, session: Session) -> list[OverviewRow]:
    """Every current case × hardware kind it runs on or has runs for, in three queries."""
    counts = session.execute(
        select(
            Run.case_id,
            Run.hardware_kind_id,
            func.count().label("runs"),
            func.count().filter(Run.status == RunStatus.FAILED).label("failed"),
        )
        .join(Case, Case.id == Run.case_id)
        .where(Case.is_current.is_(True))
        .group_by(Run.case_id, Run.hardware_kind_id)
    ).all()
    ranked = (
        select(
            Run.id,
            Run.case_id,
            Run.hardware_kind_id,
            Run.denoise_step_ms,
            Run.denoise_step_basis,
            Commit.sha,
            Commit.committed_at,
            func.row_number()
            .over(
                partition_by=(Run.case_id, Run.hardware_kind_id),
                order_by=(Commit.committed_at.desc(), Run.id.desc()),
            )
            .label("rank"),
        )
        .join(Commit, Commit.id == Run.commit_id)
        .join(Case, Case.id == Run.case_id)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(
            Case.is_current.is_(True),
            Run.status == RunStatus.OK,
            Candidate.patch_count == 0,
            Job.comparison_id.is_(None),
        )
        .subquery()
    )
    latest_rows = session.execute(select(ranked).where(ranked.c.rank <= 2)).all()
    latest: dict[tuple[int, int], list[tuple[int, float | None, str | None, str, dt.datetime]]] = {}
    for row in sorted(latest_rows, key=lambda r: r.rank):
        latest.setdefault((row.case_id, row.hardware_kind_id), []).append(
            (row.id, row.denoise_step_ms, row.denoise_step_basis, row.sha, row.committed_at)
        )
    cases = session.scalars(
        select(Case).where(Case.is_current.is_(True)).options(selectinload(Case.hardware))
    ).all()
    kinds = {kind.id: kind for kind in session.scalars(select(HardwareKind))}
    count_map = {(row.case_id, row.hardware_kind_id): (row.runs, row.failed) for row in counts}
    rows: list[OverviewRow] = []
    for case in cases:
        kind_ids = [entry.hardware_kind_id for entry in case.hardware]
        kind_ids += [
            kind_id for (case_id, kind_id) in count_map if case_id == case.id and kind_id not in kind_ids
        ]
        for kind_id in kind_ids:
            kind = kinds[kind_id]
            runs, failed = count_map.get((case.id, kind_id), (0, 0))
            points = latest.get((case.id, kind_id), [])
            head = points[0] if points else None
            rows.append(
                OverviewRow(
                    case_slug=case.slug,
                    case_title=case.title,
                    model=case.model,
                    family=case.model_family,
                    suite=case.suite,
                    hardware=kind.name,
                    threshold_pct=case.threshold_for(kind.name),
                    run_count=runs,
                    failed_count=failed,
                    latest_run_id=head[0] if head else None,
                    latest_value_ms=head[1] if head else None,
                    latest_basis=head[2] if head else None,
                    latest_commit_sha=head[3] if head else None,
                    latest_committed_at=head[4] if head else None,
                    previous_value_ms=points[1][1] if len(points) > 1 else None,
                )
            )
    rows.sort(key=lambda row: (row.family, row.case_slug, row.hardware))
    return rows


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
    column = METRIC_COLUMNS[metric]
    # A series follows the branch: runs of plain commits. Stacked-patch candidates (PR A/B,
    # carried fixes on a base) measure something else and are shown apart.
    where = (
        Run.case_id == case.id,
        Run.hardware_kind_id == kind.id,
        Candidate.patch_count == 0,
        Job.comparison_id.is_(None),  # comparison rounds (A/B, A/A) are shown with their comparison
    )
    total = (
        session.scalar(
            select(func.count())
            .select_from(Run)
            .join(Candidate, Candidate.id == Run.candidate_id)
            .outerjoin(Job, Job.id == Run.job_id)
            .where(*where)
        )
        or 0
    )
    query = (
        select(
            Run.id,
            Run.status,
            column.label("value"),
            Run.denoise_step_basis,
            Run.candidate_id,
            Run.failure_reason,
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
        .limit(limit + 1)  # one run more than shown: the first shown point's change needs its predecessor
    )
    rows = list(reversed(session.execute(query).all()))
    points: list[SeriesPoint] = []
    previous: float | None = None
    if len(rows) > limit:
        seed = rows.pop(0)
        previous = _value_of(seed.value, seed.status)
    for row in rows:
        value = _value_of(row.value, row.status)
        points.append(
            SeriesPoint(
                run_id=row.id,
                status=str(row.status),
                value=value,
                basis=row.denoise_step_basis if metric is Metric.DENOISE_STEP_MS else None,
                commit_sha=row.sha,
                commit_title=row.title,
                commit_author=row.author_name,
                committed_at=row.committed_at,
                committed_at_estimated=row.committed_at_estimated,
                candidate_id=row.candidate_id,
                failure_reason=row.failure_reason,
                change_pct=change_pct(previous, value)
                if previous is not None and value is not None
                else None,
            )
        )
        if value is not None:
            previous = value
    return Series(
        case=case,
        hardware=kind.name,
        metric=metric,
        unit=METRIC_UNITS[metric],
        threshold_pct=case.threshold_for(kind.name),
        points=points,
        total=total,
    )


def _value_of(value: float | int | None, status: RunStatus) -> float | None:
    """A series value: only successful runs have one."""
    return float(value) if value is not None and status == RunStatus.OK else None


def get_run(*, session: Session, run_id: int) -> Run:
    """One run with its stages and artifacts (step vector, log, environment)."""
    run = session.scalar(
        select(Run)
        .where(Run.id == run_id)
        .options(selectinload(Run.stages), selectinload(Run.artifacts), selectinload(Run.candidate))
    )
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run


def case_hardware_names(*, session: Session, case: Case) -> list[str]:
    """Hardware kinds a case has runs on or is set up for."""
    configured = [entry.hardware_kind.name for entry in case.hardware]
    measured = session.scalars(
        select(HardwareKind.name)
        .join(Run, Run.hardware_kind_id == HardwareKind.id)
        .where(Run.case_id == case.id)
        .distinct()
    ).all()
    return configured + sorted(name for name in measured if name not in configured)


__all__ = [
    "METRIC_COLUMNS",
    "OverviewRow",
    "Series",
    "SeriesPoint",
    "case_hardware_names",
    "get_run",
    "overview",
    "parse_metric",
    "series",
]
