"""What the series chart draws: points by kind, the per-run IQR band, the threshold band around the
current level, alerts at their first-bad commit (and culprit), and stacked-patch candidates measured
on the case, which are not series points and are listed apart."""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, field

from sqlalchemy import not_, select
from sqlalchemy.orm import Session, selectinload

from tracker.catalog.cases import get_hardware_kind
from tracker.detection.output_alerts import alert_kind, output_alert_view
from tracker.enums import Metric, RunStatus
from tracker.models import Alert, Candidate, Case, Commit, Job, Run
from tracker.series.state import ThresholdInfo, series_threshold
from tracker.views.alert_display import alert_displays
from tracker.views.series import Series, series

LEVEL_RUNS = 10  # the current level: median of up to this many runs since the latest change


@dataclass(frozen=True)
class ChartCommit:
    """A commit an alert points at."""

    sha: str
    title: str
    author: str
    committed_at: dt.datetime


@dataclass(frozen=True)
class ChartAlert:
    """An alert of the series, placed at its first-bad commit."""

    alert_id: int
    direction: str
    state: str
    change_pct: float  # as lists show it: the paired estimate once paired rounds measured one
    before_value: float
    after_value: float
    first_bad: ChartCommit
    last_good: ChartCommit | None
    culprit: ChartCommit | None
    fixed_by: ChartCommit | None
    kind: str = "speed"  # "output": the seeded output changed (an event, not a level of the chart)
    output_summary: str = ""  # e.g. "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)"


@dataclass(frozen=True)
class ThresholdBand:
    """The band a new run may move in without being a change: level × (1 ± pct/100)."""

    level: float
    pct: float
    since: dt.datetime | None
    description: str

    @property
    def low(self) -> float:
        """Lower edge of the band."""
        return self.level * (1 - self.pct / 100)

    @property
    def high(self) -> float:
        """Upper edge of the band."""
        return self.level * (1 + self.pct / 100)


@dataclass(frozen=True)
class SeriesChart:
    """A series with what the chart draws over it."""

    series: Series
    threshold: ThresholdInfo
    band: ThresholdBand | None
    alerts: list[ChartAlert]
    # Runs flagged for their measuring conditions (contention, throttling): run id → flag.
    flags: dict[int, str] = field(default_factory=dict)


def series_chart(
    *,
    session: Session,
    case_slug: str,
    hardware: str,
    metric: Metric = Metric.DENOISE_STEP_MS,
    limit: int = 500,
) -> SeriesChart:
    """The newest ``limit`` runs of a series with its threshold band and alerts."""
    data = series(session=session, case_slug=case_slug, hardware=hardware, metric=metric, limit=limit)
    kind = get_hardware_kind(session=session, name=data.hardware)
    threshold = series_threshold(session=session, case=data.case, hardware=kind)
    alerts = chart_alerts(session=session, case=data.case, hardware_kind_id=kind.id)
    return SeriesChart(
        series=data,
        threshold=threshold,
        band=_band(data, threshold, alerts),
        alerts=alerts,
        flags=measurement_flags(
            session=session, run_ids=[p.run_id for p in data.points if p.excluded_reason]
        ),
    )


def measurement_flags(*, session: Session, run_ids: list[int]) -> dict[int, str]:
    """Which of these (excluded) runs hygiene flagged, and for what; one query, none when empty."""
    if not run_ids:
        return {}
    rows = session.execute(
        select(Run.id, Run.measurement_flag).where(Run.id.in_(run_ids), Run.measurement_flag.is_not(None))
    ).all()
    return {int(row.id): str(row.measurement_flag) for row in rows if row.measurement_flag is not None}


def chart_alerts(*, session: Session, case: Case, hardware_kind_id: int) -> list[ChartAlert]:
    """Alerts of a series with their commits and how each reads, in three queries."""
    alerts = session.scalars(
        select(Alert)
        .where(Alert.case_id == case.id, Alert.hardware_kind_id == hardware_kind_id)
        .order_by(Alert.created_at.desc(), Alert.id.desc())
        .options(
            selectinload(Alert.first_bad_commit),
            selectinload(Alert.last_good_commit),
            selectinload(Alert.culprit_commit),
            selectinload(Alert.fixed_by_commit),
        )
    ).all()
    displays = alert_displays(session=session, alerts=alerts)
    return [
        ChartAlert(
            alert_id=alert.id,
            direction=alert.direction.value,
            state=displays[alert.id].state.value,
            change_pct=displays[alert.id].change_pct,
            before_value=alert.before_value,
            after_value=alert.after_value,
            first_bad=_commit(alert.first_bad_commit),
            last_good=_commit(alert.last_good_commit) if alert.last_good_commit else None,
            culprit=_commit(alert.culprit_commit) if alert.culprit_commit else None,
            fixed_by=_commit(alert.fixed_by_commit) if alert.fixed_by_commit else None,
            kind=alert_kind(alert),
            output_summary=view.summary if (view := output_alert_view(alert)) is not None else "",
        )
        for alert in alerts
    ]


def _commit(commit: Commit) -> ChartCommit:
    return ChartCommit(
        sha=commit.sha, title=commit.title, author=commit.author_name, committed_at=commit.committed_at
    )


def _band(data: Series, threshold: ThresholdInfo, alerts: list[ChartAlert]) -> ThresholdBand | None:
    """Median of the newest runs since the latest change (an alert's first bad or fixing commit)."""
    if data.metric is Metric.GRAPH_BREAKS:
        return None
    timed = [alert for alert in alerts if alert.kind != "output"]  # a changed picture moves no level
    changes = [alert.first_bad.committed_at for alert in timed]
    changes += [alert.fixed_by.committed_at for alert in timed if alert.fixed_by]
    since = max(changes, default=None)
    values = [
        point.value
        for point in data.points
        if point.value is not None
        and point.excluded_reason is None
        and (since is None or point.committed_at >= since)
    ]
    if not values:
        return None
    recent = values[-LEVEL_RUNS:]
    return ThresholdBand(
        level=statistics.median(recent),
        pct=threshold.applied_pct,
        since=since,
        description=f"± {threshold.applied_pct:.2f} % around the median of the last {len(recent)} runs"
        + (" since the latest change" if since else ""),
    )


@dataclass(frozen=True)
class PatchedRun:
    """A run of a stacked-patch candidate (base commit plus patches) on a case: not a series point."""

    run_id: int
    status: str
    value: float | None
    base_sha: str
    label: str
    patch_count: int
    reason: str
    comparison_id: int | None
    created_at: dt.datetime


def patched_runs(*, session: Session, case: Case, hardware_kind_id: int, limit: int = 20) -> list[PatchedRun]:
    """The newest runs of stacked-patch candidates measured on a series' case and hardware."""
    rows = session.execute(
        select(
            Run.id,
            Run.status,
            Run.denoise_step_ms,
            Run.source,
            Run.created_at,
            Candidate.label,
            Candidate.patch_count,
            Commit.sha,
            Job.reason,
            Job.comparison_id,
        )
        .join(Candidate, Candidate.id == Run.candidate_id)
        .join(Commit, Commit.id == Candidate.base_commit_id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(Run.case_id == case.id, Run.hardware_kind_id == hardware_kind_id, not_(Candidate.is_plain))
        .order_by(Run.created_at.desc(), Run.id.desc())
        .limit(limit)
    ).all()
    return [
        PatchedRun(
            run_id=row.id,
            status=str(row.status),
            value=row.denoise_step_ms if row.status == RunStatus.OK else None,
            base_sha=row.sha,
            label=row.label,
            patch_count=row.patch_count,
            reason=str(row.reason) if row.reason is not None else str(row.source),
            comparison_id=row.comparison_id,
            created_at=row.created_at,
        )
        for row in rows
    ]


__all__ = [
    "ChartAlert",
    "ChartCommit",
    "PatchedRun",
    "SeriesChart",
    "ThresholdBand",
    "chart_alerts",
    "patched_runs",
    "series_chart",
]
