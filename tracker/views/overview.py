"""The overview: one row per current case × hardware kind, with its latest value of record, a
baseline, a sparkline's worth of recent runs, its open alerts, its last nightly run and its newest
regression, read in a fixed number of queries whatever the data.

The newest points and the last nightly run of every series are each read in two passes: an indexed
first pass over recent data, and a second over all runs of the few series the first left short.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnExpressionArgument, func, select
from sqlalchemy.orm import Session, selectinload

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
    Run,
    RunStatus,
    SeriesCount,
)
from tracker.statistics.steps import change_pct

BASELINE_RUNS = 5  # the overview's baseline: median of this many runs before the latest
SPARKLINE_RUNS = 20  # runs drawn in an overview sparkline
LATEST_POINTS = max(SPARKLINE_RUNS, BASELINE_RUNS + 1)  # newest points the overview reads per series
RECENT_COMMITS = LATEST_POINTS + 5  # commits the overview's first, indexed pass ranks runs of
NIGHTLY_WINDOW = dt.timedelta(days=7)  # how far back from the newest run the first pass looks for nightlies
RECENT_REGRESSION = dt.timedelta(days=30)  # a regression counts as recent within this of the newest run

SeriesKey = tuple[int, int]  # (case id, hardware kind id)


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


@dataclass(frozen=True)
class _SeriesReads:
    """What the overview read about every series, by (case id, hardware kind id)."""

    counts: dict[SeriesKey, tuple[int, int]]  # runs, failed runs
    latest: dict[SeriesKey, list[Any]]  # newest points first
    nightly: dict[SeriesKey, Any]  # the last nightly run
    open_alerts: dict[tuple[int, int, Direction], int]
    regressions: dict[SeriesKey, RecentRegression]


def overview(*, session: Session) -> list[OverviewRow]:
    """Every current case × hardware kind it runs on or has runs for, in eleven queries whatever the data.

    Rows with an open regression come first, then those with a recent one (fixed or acknowledged),
    then by model family, case and hardware.
    """
    counts = _series_counts(session)
    reads = _SeriesReads(
        counts=counts,
        latest=_latest_points(session, counts),
        nightly=_last_nightly(session, counts),
        open_alerts=_open_alert_counts(session),
        regressions=_newest_regressions(session),
    )
    cases = session.scalars(
        select(Case).where(Case.is_current.is_(True)).options(selectinload(Case.hardware))
    ).all()
    kinds = {kind.id: kind for kind in session.scalars(select(HardwareKind))}
    rows = [
        _overview_row(case, kinds[kind_id], reads)
        for case in cases
        for kind_id in _hardware_kind_ids(case, counts)
    ]
    rows.sort(key=lambda row: (row.rank, row.family, row.case_slug, row.hardware))
    return rows


def _series_counts(session: Session) -> dict[SeriesKey, tuple[int, int]]:
    """Runs and failed runs of every series of a current case that has any."""
    counts = session.execute(
        select(SeriesCount.case_id, SeriesCount.hardware_kind_id, SeriesCount.runs, SeriesCount.failed)
        .join(Case, Case.id == SeriesCount.case_id)
        .where(Case.is_current.is_(True), SeriesCount.runs > 0)
    ).all()
    return {(row.case_id, row.hardware_kind_id): (row.runs, row.failed) for row in counts}


def _open_alert_counts(session: Session) -> dict[tuple[int, int, Direction], int]:
    """Open alerts by case, hardware kind and direction."""
    open_alerts = session.execute(
        select(Alert.case_id, Alert.hardware_kind_id, Alert.direction, func.count().label("alerts"))
        .where(Alert.status == AlertStatus.OPEN)
        .group_by(Alert.case_id, Alert.hardware_kind_id, Alert.direction)
    ).all()
    return {(row.case_id, row.hardware_kind_id, row.direction): row.alerts for row in open_alerts}


def _newest_regressions(session: Session) -> dict[SeriesKey, RecentRegression]:
    """The regression with the newest first-bad commit of every series, invalid and expected ones aside."""
    regressions: dict[SeriesKey, RecentRegression] = {}
    for row in session.execute(
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
        regressions[(row.case_id, row.hardware_kind_id)] = RecentRegression(
            alert_id=row.id,
            status=str(row.status),
            change_pct=row.change_pct,
            first_bad_sha=row.sha,
            first_bad_title=row.title,
            first_bad_at=row.committed_at,
        )
    return regressions


def _hardware_kind_ids(case: Case, counts: dict[SeriesKey, tuple[int, int]]) -> list[int]:
    """The kinds a case is set up for, then any others it has runs on."""
    kind_ids = [entry.hardware_kind_id for entry in case.hardware]
    return kind_ids + [
        kind_id for (case_id, kind_id) in counts if case_id == case.id and kind_id not in kind_ids
    ]


def _overview_row(case: Case, kind: HardwareKind, reads: _SeriesReads) -> OverviewRow:
    """The overview row of one series from what was read about every series."""
    key = (case.id, kind.id)
    runs, failed = reads.counts.get(key, (0, 0))
    points = reads.latest.get(key, [])
    head = points[0] if points else None
    before = [float(point.denoise_step_ms) for point in points[1 : BASELINE_RUNS + 1]]
    last_night = reads.nightly.get(key)
    return OverviewRow(
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
        recent_ms=tuple(float(point.denoise_step_ms) for point in reversed(points[:SPARKLINE_RUNS])),
        open_regressions=reads.open_alerts.get((*key, Direction.REGRESSION), 0),
        open_improvements=reads.open_alerts.get((*key, Direction.IMPROVEMENT), 0),
        last_nightly_status=str(last_night.status) if last_night else None,
        last_nightly_at=_as_utc(last_night.at) if last_night else None,
        last_nightly_run_id=last_night.id if last_night else None,
        recent_regression=_if_recent(reads.regressions.get(key), head),
    )


def _if_recent(regression: RecentRegression | None, head: Any) -> RecentRegression | None:
    """``regression`` if its first-bad commit is within :data:`RECENT_REGRESSION` of the latest point."""
    if regression is None or head is None or regression.first_bad_at < head.committed_at - RECENT_REGRESSION:
        return None
    return regression


def _plain_branch_runs() -> tuple[ColumnExpressionArgument[bool], ...]:
    """Runs that are series points: plain commits, outside comparisons, not excluded."""
    return (
        Case.is_current.is_(True),
        Candidate.is_plain,
        Job.comparison_id.is_(None),
        Run.excluded_reason.is_(None),
    )


def _latest_points(session: Session, counts: dict[SeriesKey, tuple[int, int]]) -> dict[SeriesKey, list[Any]]:
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
) -> dict[SeriesKey, list[Any]]:
    """The newest :data:`LATEST_POINTS` series points of every series (runs of commits since
    ``since`` and of ``case_ids``, where given), newest first."""
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
    latest: dict[SeriesKey, list[Any]] = {}
    for row in session.execute(select(ranked).where(ranked.c.rank <= LATEST_POINTS).order_by(ranked.c.rank)):
        latest.setdefault((row.case_id, row.hardware_kind_id), []).append(row)
    return latest


def _last_nightly(session: Session, counts: dict[SeriesKey, tuple[int, int]]) -> dict[SeriesKey, Any]:
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


def _nightly_ranked(
    session: Session, *, since: dt.datetime | None = None, case_ids: set[int] | None = None
) -> dict[SeriesKey, Any]:
    """The newest nightly run of every series (runs since ``since`` and of ``case_ids``, where given)."""
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


__all__ = [
    "BASELINE_RUNS",
    "SPARKLINE_RUNS",
    "OverviewRow",
    "RecentRegression",
    "overview",
]
