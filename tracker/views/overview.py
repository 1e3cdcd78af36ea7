"""The overview: one row per current case × hardware kind, with its latest value of record, a
baseline, a sparkline's worth of recent runs, its open alerts, its last nightly run and its newest
regression, read in a fixed number of queries whatever the data.

Alerts count as people read them (:mod:`tracker.views.alert_display`): a suspect paired rounds are
still confirming, or left unconfirmed, is no open regression; an output alert (a changed picture,
figures in dB) is counted apart from the speed alerts; a regression shows its paired estimate once
paired rounds measured it.

The newest points and the last nightly run of every series come from the read model ingest keeps,
``series_latest`` (:mod:`tracker.series.latest`): one row a series, not a ranking of recent runs.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, replace

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tracker.detection.triage import SUSPECT_CONFIRMATIONS, in_state
from tracker.enums import AlertState, AlertStatus, Direction, EstimateBasis, Metric
from tracker.models import Alert, Case, CaseHardware, Commit, HardwareKind, SeriesCount
from tracker.series.latest import CommitRef, LatestReads, SeriesSummary, read_current_latest
from tracker.series.points import LATEST_POINTS, SeriesKey
from tracker.statistics.steps import change_pct
from tracker.views.alert_display import paired_estimates, shown_change

BASELINE_RUNS = 5  # the overview's baseline: median of this many runs before the latest
SPARKLINE_RUNS = LATEST_POINTS  # runs drawn in an overview sparkline: as many as a series keeps
RECENT_REGRESSION = dt.timedelta(days=30)  # a regression counts as recent within this of the newest run
NOTHING = SeriesSummary()  # a series without points or nightly runs
if LATEST_POINTS < BASELINE_RUNS + 1:
    raise ImportError("series_latest keeps too few points for the overview's baseline")


@dataclass(frozen=True)
class RecentRegression:
    """The newest speed regression of a series that is neither invalid nor expected, nor a suspect
    (still confirming, or unconfirmed); ``change_pct`` is the figure shown, as ``basis`` says."""

    alert_id: int
    status: str
    change_pct: float
    basis: EstimateBasis
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
    open_output_changes: int = 0  # open output alerts: the seeded picture changed (not a speed change)
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
        """Open speed alerts of the series, either direction (output changes are counted apart)."""
        return self.open_regressions + self.open_improvements


@dataclass(frozen=True)
class _CaseFacts:
    """What the overview shows of a current case (columns of ``cases``), and its kinds."""

    id: int
    slug: str
    title: str
    model: str
    model_family: str
    suite: str
    threshold_pct: float
    set_up: dict[int, float | None]  # the kinds it is set up for, in order → a threshold of its own


@dataclass(frozen=True)
class _SeriesReads:
    """What the overview read about every series, by (case id, hardware kind id)."""

    counts: dict[SeriesKey, tuple[int, int]]  # runs, failed runs
    latest: LatestReads  # newest points and last nightly run, and the points' commits
    open_alerts: dict[tuple[int, int, Direction], int]  # open speed alerts
    open_outputs: dict[SeriesKey, int]  # open output alerts
    regressions: dict[SeriesKey, RecentRegression]


def overview(*, session: Session) -> list[OverviewRow]:
    """Every current case × hardware kind it runs on or has runs for, in nine queries whatever the
    data (two or three more when a series' ``series_latest`` row is missing or out of date).

    Rows with an open regression come first, then those with a recent one (fixed or acknowledged),
    then by model family, case and hardware.
    """
    counts = _series_counts(session)
    open_alerts, open_outputs = _open_alert_counts(session)
    reads = _SeriesReads(
        counts=counts,
        latest=read_current_latest(session=session, expected=counts.keys()),
        open_alerts=open_alerts,
        open_outputs=open_outputs,
        regressions=_newest_regressions(session),
    )
    kinds = {row.id: row.name for row in session.execute(select(HardwareKind.id, HardwareKind.name))}
    measured_on: dict[int, list[int]] = {}  # case id → the kinds it has runs on
    for case_id, kind_id in counts:
        measured_on.setdefault(case_id, []).append(kind_id)
    rows = [
        _overview_row(case, kind_id, kinds[kind_id], reads)
        for case in _current_cases(session)
        for kind_id in [
            *case.set_up,
            *(kind for kind in measured_on.get(case.id, []) if kind not in case.set_up),
        ]
    ]
    rows.sort(key=lambda row: (row.rank, row.family, row.case_slug, row.hardware))
    return rows


def _current_cases(session: Session) -> list[_CaseFacts]:
    """What the overview shows of each current case, and the kinds it is set up for (two queries)."""
    set_up: dict[int, dict[int, float | None]] = {}
    for entry in session.execute(
        select(CaseHardware.case_id, CaseHardware.hardware_kind_id, CaseHardware.threshold_pct)
        .join(Case, Case.id == CaseHardware.case_id)
        .where(Case.is_current.is_(True))
        .order_by(CaseHardware.id)
    ):
        set_up.setdefault(entry.case_id, {})[entry.hardware_kind_id] = entry.threshold_pct
    cases = session.execute(
        select(
            Case.id, Case.slug, Case.title, Case.model, Case.model_family, Case.suite, Case.threshold_pct
        ).where(Case.is_current.is_(True))
    )
    return [_CaseFacts(*case, set_up=set_up.get(case.id, {})) for case in cases]


def _series_counts(session: Session) -> dict[SeriesKey, tuple[int, int]]:
    """Runs and failed runs of every series of a current case that has any."""
    counts = session.execute(
        select(SeriesCount.case_id, SeriesCount.hardware_kind_id, SeriesCount.runs, SeriesCount.failed)
        .join(Case, Case.id == SeriesCount.case_id)
        .where(Case.is_current.is_(True), SeriesCount.runs > 0)
    ).all()
    return {(row.case_id, row.hardware_kind_id): (row.runs, row.failed) for row in counts}


def _open_alert_counts(
    session: Session,
) -> tuple[dict[tuple[int, int, Direction], int], dict[SeriesKey, int]]:
    """Open alerts (suspects aside) by case, hardware kind and direction; open output alerts apart."""
    speed: dict[tuple[int, int, Direction], int] = {}
    outputs: dict[SeriesKey, int] = {}
    for row in session.execute(
        select(
            Alert.case_id, Alert.hardware_kind_id, Alert.direction, Alert.metric, func.count().label("alerts")
        )
        .where(*in_state(AlertState.OPEN))
        .group_by(Alert.case_id, Alert.hardware_kind_id, Alert.direction, Alert.metric)
    ):
        if row.metric is Metric.OUTPUT:
            key = (row.case_id, row.hardware_kind_id)
            outputs[key] = outputs.get(key, 0) + row.alerts
        else:
            key3 = (row.case_id, row.hardware_kind_id, row.direction)
            speed[key3] = speed.get(key3, 0) + row.alerts
    return speed, outputs


def _newest_regressions(session: Session) -> dict[SeriesKey, RecentRegression]:
    """The speed regression with the newest first-bad commit of every series, invalid and expected
    ones and suspects aside, shown with its paired estimate when it has one (two queries)."""
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
            Alert.metric != Metric.OUTPUT,
            Alert.status.not_in((AlertStatus.INVALID, AlertStatus.EXPECTED)),
            Alert.confirmation.not_in(SUSPECT_CONFIRMATIONS),
        )
        .order_by(Commit.committed_at, Alert.id)
    ):
        regressions[(row.case_id, row.hardware_kind_id)] = RecentRegression(
            alert_id=row.id,
            status=str(row.status),
            change_pct=row.change_pct,
            basis=EstimateBasis.DETECTION,
            first_bad_sha=row.sha,
            first_bad_title=row.title,
            first_bad_at=row.committed_at,
        )
    paired = paired_estimates(session=session, alert_ids=[item.alert_id for item in regressions.values()])
    for key, regression in regressions.items():
        shown, basis = shown_change(regression.change_pct, paired.get(regression.alert_id))
        regressions[key] = replace(regression, change_pct=shown, basis=basis)
    return regressions


def _overview_row(case: _CaseFacts, kind_id: int, hardware: str, reads: _SeriesReads) -> OverviewRow:
    """The overview row of one series from what was read about every series."""
    key = (case.id, kind_id)
    threshold = case.set_up.get(kind_id)
    runs, failed = reads.counts.get(key, (0, 0))
    latest = reads.latest.series.get(key, NOTHING)
    head = latest.head
    commit = reads.latest.commits[head.commit_id] if head else None
    before = list(latest.values_ms[1 : BASELINE_RUNS + 1])
    last_night = latest.nightly
    return OverviewRow(
        case_slug=case.slug,
        case_title=case.title,
        model=case.model,
        family=case.model_family,
        suite=case.suite,
        hardware=hardware,
        threshold_pct=case.threshold_pct if threshold is None else threshold,  # as Case.threshold_for
        run_count=runs,
        failed_count=failed,
        latest_run_id=head.run_id if head else None,
        latest_value_ms=head.value_ms if head else None,
        latest_basis=head.basis if head else None,
        latest_commit_sha=commit.sha if commit else None,
        latest_committed_at=commit.committed_at if commit else None,
        previous_value_ms=before[0] if before else None,
        baseline_ms=statistics.median(before) if before else None,
        baseline_runs=len(before),
        recent_ms=latest.values_ms[:SPARKLINE_RUNS][::-1],
        open_regressions=reads.open_alerts.get((*key, Direction.REGRESSION), 0),
        open_improvements=reads.open_alerts.get((*key, Direction.IMPROVEMENT), 0),
        open_output_changes=reads.open_outputs.get(key, 0),
        last_nightly_status=str(last_night.status) if last_night else None,
        last_nightly_at=last_night.at if last_night else None,
        last_nightly_run_id=last_night.run_id if last_night else None,
        recent_regression=_if_recent(reads.regressions.get(key), commit),
    )


def _if_recent(regression: RecentRegression | None, head: CommitRef | None) -> RecentRegression | None:
    """``regression`` if its first-bad commit is within :data:`RECENT_REGRESSION` of the latest point."""
    if regression is None or head is None or regression.first_bad_at < head.committed_at - RECENT_REGRESSION:
        return None
    return regression


__all__ = [
    "BASELINE_RUNS",
    "SPARKLINE_RUNS",
    "OverviewRow",
    "RecentRegression",
    "overview",
]
