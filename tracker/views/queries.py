"""Read models for the API and pages: overview, series, runs. Never loads step vectors or logs
for more than one run."""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, ColumnExpressionArgument, func, select
from sqlalchemy.orm import Session, selectinload

from tracker.catalog.cases import get_hardware_kind
from tracker.enums import enum_values
from tracker.errors import InvalidInput, NotFound
from tracker.models import (
    Alert,
    AlertStatus,
    Candidate,
    Case,
    Commit,
    Direction,
    HardwareKind,
    Job,
    JobReason,
    Metric,
    Run,
    RunStatus,
    SeriesCount,
)
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
    try:
        return Metric(value)
    except ValueError:
        raise InvalidInput(
            "metric", f"unknown metric {value!r}; valid: {', '.join(enum_values(Metric))}"
        ) from None


BASELINE_RUNS = 5  # the overview's baseline: median of this many runs before the latest
SPARKLINE_RUNS = 20  # runs drawn in an overview sparkline
LATEST_POINTS = max(SPARKLINE_RUNS, BASELINE_RUNS + 1)  # newest points the overview reads per series
RECENT_COMMITS = LATEST_POINTS + 5  # commits the overview's first, indexed pass ranks runs of
NIGHTLY_WINDOW = dt.timedelta(days=7)  # how far back from the newest run the first pass looks for nightlies
RECENT_REGRESSION = dt.timedelta(days=30)  # a regression counts as recent within this of the newest run


@dataclass(frozen=True)
class RecentRegression:
    """The newest regression alert of a series that is neither invalid nor expected."""

    alert_id: int
    status: str
    change_pct: float
    first_bad_sha: str
    first_bad_title: str
    first_bad_at: dt.datetime


@dataclass(frozen=True)
class OverviewRow:
    """One case on one hardware kind: its latest value of record, baseline, recent runs and alerts."""

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
    baseline_ms: float | None = None
    baseline_runs: int = 0
    recent_ms: tuple[float, ...] = ()
    open_regressions: int = 0
    open_improvements: int = 0
    last_nightly_status: str | None = None
    last_nightly_at: dt.datetime | None = None
    last_nightly_run_id: int | None = None
    recent_regression: RecentRegression | None = None

    @property
    def rank(self) -> int:
        """0: an open regression; 1: a regression within 30 days of the newest run; 2: the rest."""
        if self.open_regressions:
            return 0
        return 1 if self.recent_regression is not None else 2

    @property
    def change_pct(self) -> float | None:
        """Latest value vs the baseline (median of up to five runs before it), in percent."""
        if self.latest_value_ms is None or self.baseline_ms is None:
            return None
        return change_pct(self.baseline_ms, self.latest_value_ms)

    @property
    def open_alerts(self) -> int:
        """Open alerts of the series, either direction."""
        return self.open_regressions + self.open_improvements


def _plain_branch_runs() -> tuple[ColumnExpressionArgument[bool], ...]:
    """Runs that are series points: plain commits, outside comparisons, not excluded."""
    return (
        Case.is_current.is_(True),
        Candidate.is_plain,
        Job.comparison_id.is_(None),
        Run.excluded_reason.is_(None),
    )


def overview(*, session: Session) -> list[OverviewRow]:
    """Every current case × hardware kind it runs on or has runs for, in eleven queries whatever the data.

    Rows with an open regression come first, then those with a recent one (fixed or acknowledged),
    then by model family, case and hardware.
    """
    counts = session.execute(
        select(SeriesCount.case_id, SeriesCount.hardware_kind_id, SeriesCount.runs, SeriesCount.failed)
        .join(Case, Case.id == SeriesCount.case_id)
        .where(Case.is_current.is_(True), SeriesCount.runs > 0)
    ).all()
    count_map = {(row.case_id, row.hardware_kind_id): (row.runs, row.failed) for row in counts}
    latest = _latest_points(session, count_map)
    nightly = _last_nightly(session, count_map)
    open_alerts = session.execute(
        select(Alert.case_id, Alert.hardware_kind_id, Alert.direction, func.count().label("alerts"))
        .where(Alert.status == AlertStatus.OPEN)
        .group_by(Alert.case_id, Alert.hardware_kind_id, Alert.direction)
    ).all()
    alert_map: dict[tuple[int, int, Direction], int] = {
        (row.case_id, row.hardware_kind_id, row.direction): row.alerts for row in open_alerts
    }
    regressions: dict[tuple[int, int], RecentRegression] = {}
    for alert_row in session.execute(
        select(
            Alert.id,
            Alert.case_id,
            Alert.hardware_kind_id,
            Alert.status,
            Alert.change_pct,
            Commit.sha,
            Commit.title,
            Commit.committed_at,
        )
        .join(Commit, Commit.id == Alert.first_bad_commit_id)
        .where(
            Alert.direction == Direction.REGRESSION,
            Alert.status.not_in((AlertStatus.INVALID, AlertStatus.EXPECTED)),
        )
        .order_by(Commit.committed_at, Alert.id)
    ):
        regressions[(alert_row.case_id, alert_row.hardware_kind_id)] = RecentRegression(
            alert_id=alert_row.id,
            status=str(alert_row.status),
            change_pct=alert_row.change_pct,
            first_bad_sha=alert_row.sha,
            first_bad_title=alert_row.title,
            first_bad_at=alert_row.committed_at,
        )
    cases = session.scalars(
        select(Case).where(Case.is_current.is_(True)).options(selectinload(Case.hardware))
    ).all()
    kinds = {kind.id: kind for kind in session.scalars(select(HardwareKind))}
    rows: list[OverviewRow] = []
    for case in cases:
        kind_ids = [entry.hardware_kind_id for entry in case.hardware]
        kind_ids += [
            kind_id for (case_id, kind_id) in count_map if case_id == case.id and kind_id not in kind_ids
        ]
        for kind_id in kind_ids:
            kind = kinds[kind_id]
            key = (case.id, kind_id)
            runs, failed = count_map.get(key, (0, 0))
            points = latest.get(key, [])
            head = points[0] if points else None
            before = [float(point.denoise_step_ms) for point in points[1 : BASELINE_RUNS + 1]]
            last_night = nightly.get(key)
            regression = regressions.get(key)
            if regression is not None and (
                head is None or regression.first_bad_at < head.committed_at - RECENT_REGRESSION
            ):
                regression = None
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
                    latest_run_id=head.id if head else None,
                    latest_value_ms=float(head.denoise_step_ms) if head else None,
                    latest_basis=head.denoise_step_basis if head else None,
                    latest_commit_sha=head.sha if head else None,
                    latest_committed_at=head.committed_at if head else None,
                    previous_value_ms=before[0] if before else None,
                    baseline_ms=statistics.median(before) if before else None,
                    baseline_runs=len(before),
                    recent_ms=tuple(
                        float(point.denoise_step_ms) for point in reversed(points[:SPARKLINE_RUNS])
                    ),
                    open_regressions=alert_map.get((case.id, kind_id, Direction.REGRESSION), 0),
                    open_improvements=alert_map.get((case.id, kind_id, Direction.IMPROVEMENT), 0),
                    last_nightly_status=str(last_night.status) if last_night else None,
                    last_nightly_at=_as_utc(last_night.at) if last_night else None,
                    last_nightly_run_id=last_night.id if last_night else None,
                    recent_regression=regression,
                )
            )
    rows.sort(key=lambda row: (row.rank, row.family, row.case_slug, row.hardware))
    return rows


def _latest_points(
    session: Session, counts: dict[tuple[int, int], tuple[int, int]]
) -> dict[tuple[int, int], list[Any]]:
    """The newest :data:`LATEST_POINTS` series points of every series, newest first.

    A first pass ranks only the runs of the newest :data:`RECENT_COMMITS` commits (an index
    lookup instead of a window over every run); a series with fewer points there and more runs
    in all is ranked again over all its runs. Any run left out of the first pass is on an older
    commit than every run in it, so the result is exactly that of one pass over all runs.
    """
    cutoff = session.scalar(
        select(Commit.committed_at).order_by(Commit.committed_at.desc()).offset(RECENT_COMMITS - 1).limit(1)
    )
    latest = _ranked_points(session, since=cutoff)
    short = {
        key
        for key, (runs, _) in counts.items()
        if len(latest.get(key, [])) < LATEST_POINTS and runs > len(latest.get(key, []))
    }
    # Always run (if need be, for no case at all): the page's query count stays the same.
    if cutoff is None:
        short = set()  # the first pass read every run
    again = _ranked_points(session, case_ids={case_id for case_id, _ in short})
    latest.update({key: again.get(key, []) for key in short})
    return latest


def _ranked_points(
    session: Session, *, since: dt.datetime | None = None, case_ids: set[int] | None = None
) -> dict[tuple[int, int], list[Any]]:
    conditions = [*_plain_branch_runs(), Run.status == RunStatus.OK, Run.denoise_step_ms.is_not(None)]
    if since is not None:  # as a subquery, so that SQLite too starts from the few recent commits
        conditions.append(Run.commit_id.in_(select(Commit.id).where(Commit.committed_at >= since)))
    if case_ids is not None:
        conditions.append(Run.case_id.in_(sorted(case_ids)))
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
        .where(*conditions)
        .subquery()
    )
    latest: dict[tuple[int, int], list[Any]] = {}
    for row in session.execute(select(ranked).where(ranked.c.rank <= LATEST_POINTS).order_by(ranked.c.rank)):
        latest.setdefault((row.case_id, row.hardware_kind_id), []).append(row)
    return latest


def _last_nightly(
    session: Session, counts: dict[tuple[int, int], tuple[int, int]]
) -> dict[tuple[int, int], Any]:
    """The newest nightly run of every series (by when it ran), if it has one.

    A first pass looks only at runs of the last :data:`NIGHTLY_WINDOW` before the newest run
    (``ix_runs_measured_at``); series without a nightly run there are looked up over all their
    runs. A run outside the window ran before every run inside it, so nothing differs from one
    pass over all runs.
    """
    newest = _as_utc(session.scalar(select(func.max(Run.measured_at))))
    since = newest - NIGHTLY_WINDOW if newest is not None else None
    found = _nightly_ranked(session, since=since)
    missing = {key for key in counts if key not in found} if since is not None else set()
    again = _nightly_ranked(session, case_ids={case_id for case_id, _ in missing})  # always: see above
    found.update({key: again[key] for key in missing if key in again})
    return found
    missing = {key for key in counts if key not in found}
    if missing:
        again = _nightly_ranked(session, case_ids={case_id for case_id, _ in missing})
        found.update({key: again[key] for key in missing if key in again})
    return found


def _nightly_ranked(
    session: Session, *, since: dt.datetime | None = None, case_ids: set[int] | None = None
) -> dict[tuple[int, int], Any]:
    at = func.coalesce(Run.measured_at, Run.created_at)
    conditions = [Case.is_current.is_(True), Job.reason == JobReason.NIGHTLY]
    if since is not None:
        recent = select(Run.id).where(Run.measured_at >= since)
        undated = select(Run.id).where(Run.measured_at.is_(None), Run.created_at >= since)
        conditions.append(Run.id.in_(recent.union_all(undated)))  # two range scans of indexes
    if case_ids is not None:
        conditions.append(Run.case_id.in_(sorted(case_ids)))
    nightly_ranked = (
        select(
            Run.id,
            Run.case_id,
            Run.hardware_kind_id,
            Run.status,
            at.label("at"),
            func.row_number()
            .over(partition_by=(Run.case_id, Run.hardware_kind_id), order_by=(at.desc(), Run.id.desc()))
            .label("rank"),
        )
        .join(Job, Job.id == Run.job_id)
        .join(Case, Case.id == Run.case_id)
        .where(*conditions)
        .subquery()
    )
    return {
        (row.case_id, row.hardware_kind_id): row
        for row in session.execute(select(nightly_ranked).where(nightly_ranked.c.rank == 1))
    }


def _as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """SQLite hands back naive datetimes from expressions; every stored time is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.UTC)


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
    column = METRIC_COLUMNS[metric]
    # A series follows the branch: runs of plain commits. Stacked-patch candidates (PR A/B,
    # carried fixes on a base) measure something else and are shown apart.
    where = (
        Run.case_id == case.id,
        Run.hardware_kind_id == kind.id,
        Candidate.is_plain,
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
        .limit(limit + 1)  # one run more than shown: the first shown point's change needs its predecessor
    )
    rows = list(reversed(session.execute(query).all()))
    points: list[SeriesPoint] = []
    previous: float | None = None
    if len(rows) > limit:
        seed = rows.pop(0)
        previous = _value_of(seed.value, seed.status) if seed.excluded_reason is None else None
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
                kind=str(row.reason) if row.reason is not None else str(row.source),
                iqr=row.denoise_step_iqr_ms if metric is Metric.DENOISE_STEP_MS else None,
                excluded_reason=row.excluded_reason,
            )
        )
        if value is not None and row.excluded_reason is None:
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
    "RecentRegression",
    "Series",
    "SeriesPoint",
    "case_hardware_names",
    "get_run",
    "overview",
    "parse_metric",
    "series",
]
