"""A series as the JSON API shows it: its runs in commit order, and what the series chart draws
over them (points by kind, the threshold band, alerts at their commits), read off the read models
of :mod:`tracker.views.series` and :mod:`tracker.views.series_chart`."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from tracker.views.series import Series, SeriesPoint
from tracker.views.series_chart import ChartAlert, ChartCommit, SeriesChart, ThresholdBand
from web.schemas.commits import CommitOut


class SeriesPointOut(BaseModel):
    """One run in a series."""

    run_id: int
    status: str
    value: float | None
    basis: str | None
    change_pct: float | None
    failure_reason: str | None
    commit: CommitOut

    @classmethod
    def of(cls, point: SeriesPoint) -> SeriesPointOut:
        """From the read model, which holds its commit's fields flat (``commit_sha``, ...)."""
        return cls(
            run_id=point.run_id,
            status=point.status,
            value=point.value,
            basis=point.basis,
            change_pct=point.change_pct,
            failure_reason=point.failure_reason,
            commit=CommitOut(
                sha=point.commit_sha,
                title=point.commit_title,
                author=point.commit_author,
                committed_at=point.committed_at,
                committed_at_estimated=point.committed_at_estimated,
            ),
        )


class SeriesOut(BaseModel):
    """A case × hardware × metric series, runs in commit order (oldest first)."""

    case: str
    case_version: int
    hardware: str
    metric: str
    unit: str
    threshold_pct: float
    total_runs: int
    points: list[SeriesPointOut]

    @classmethod
    def of(cls, series: Series) -> SeriesOut:
        """From the read model."""
        return cls(
            case=series.case.slug,
            case_version=series.case.version,
            hardware=series.hardware,
            metric=series.metric.value,
            unit=series.unit,
            threshold_pct=series.threshold_pct,
            total_runs=series.total,
            points=[SeriesPointOut.of(point) for point in series.points],
        )


class ChartPointOut(BaseModel):
    """One run drawn on the series chart: x is the commit time, y the run's value."""

    run_id: int
    kind: str  # nightly, confirm, bisect, pr, manual, import (or job without its job row)
    status: str
    value: float | None
    iqr: float | None
    excluded_reason: str | None
    flag: str | None = None  # contention, gpu_throttled, cpu_steal: excluded for its measuring conditions
    sha: str
    title: str
    author: str
    committed_at: dt.datetime

    @classmethod
    def of(cls, point: SeriesPoint, flag: str | None = None) -> ChartPointOut:
        """From the read model, with the run's flag if its measuring conditions disqualify it."""
        return cls(
            run_id=point.run_id,
            kind=point.kind,
            status=point.status,
            value=point.value,
            iqr=point.iqr,
            excluded_reason=point.excluded_reason,
            flag=flag,
            sha=point.commit_sha,
            title=point.commit_title,
            author=point.commit_author,
            committed_at=point.committed_at,
        )


class ChartCommitOut(BaseModel):
    """A commit an alert points at."""

    sha: str
    title: str
    author: str
    committed_at: dt.datetime

    @classmethod
    def of(cls, commit: ChartCommit) -> ChartCommitOut:
        """From the read model."""
        return cls(sha=commit.sha, title=commit.title, author=commit.author, committed_at=commit.committed_at)


class ChartAlertOut(BaseModel):
    """An alert placed at its first-bad commit."""

    id: int
    direction: str
    state: str
    change_pct: float
    before_value: float
    after_value: float
    first_bad: ChartCommitOut
    last_good: ChartCommitOut | None
    culprit: ChartCommitOut | None
    fixed_by: ChartCommitOut | None
    kind: str = Field(
        default="speed", description="output (an output change: an event, values in dB) or speed"
    )
    output_summary: str = Field(default="", description="output alerts: what the output check found")

    @classmethod
    def of(cls, alert: ChartAlert) -> ChartAlertOut:
        """From the read model."""

        def commit(value: ChartCommit | None) -> ChartCommitOut | None:
            return ChartCommitOut.of(value) if value is not None else None

        return cls(
            id=alert.alert_id,
            direction=alert.direction,
            state=alert.state,
            change_pct=alert.change_pct,
            before_value=alert.before_value,
            after_value=alert.after_value,
            first_bad=ChartCommitOut.of(alert.first_bad),
            last_good=commit(alert.last_good),
            culprit=commit(alert.culprit),
            fixed_by=commit(alert.fixed_by),
            kind=alert.kind,
            output_summary=alert.output_summary,
        )


class ChartBandOut(BaseModel):
    """The threshold band around the current level."""

    level: float
    low: float
    high: float
    pct: float
    since: dt.datetime | None
    description: str

    @classmethod
    def of(cls, band: ThresholdBand) -> ChartBandOut:
        """From the read model."""
        return cls(
            level=band.level,
            low=band.low,
            high=band.high,
            pct=band.pct,
            since=band.since,
            description=band.description,
        )


class SeriesChartOut(BaseModel):
    """Everything the series chart draws, oldest point first."""

    case: str
    hardware: str
    metric: str
    unit: str
    threshold: str
    total_runs: int
    points: list[ChartPointOut]
    band: ChartBandOut | None
    alerts: list[ChartAlertOut]

    @classmethod
    def of(cls, chart: SeriesChart) -> SeriesChartOut:
        """From the read model: the threshold described, each point with its flag (if the run was
        measured under conditions that disqualify it)."""
        data = chart.series
        return cls(
            case=data.case.slug,
            hardware=data.hardware,
            metric=data.metric.value,
            unit=data.unit,
            threshold=chart.threshold.describe(),
            total_runs=data.total,
            points=[ChartPointOut.of(point, chart.flags.get(point.run_id)) for point in data.points],
            band=ChartBandOut.of(chart.band) if chart.band else None,
            alerts=[ChartAlertOut.of(alert) for alert in chart.alerts],
        )
