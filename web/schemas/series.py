"""A series as the JSON API shows it: its runs in commit order, and what the series chart draws
over them (points by kind, the threshold band, alerts at their commits), read off the read models
of :mod:`tracker.views.series` and :mod:`tracker.views.series_chart`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import AliasPath, BaseModel, ConfigDict, Field, model_validator

from tracker.views.series import SeriesPoint
from tracker.views.series_chart import SeriesChart
from web.schemas.commits import CommitOut


class SeriesPointOut(BaseModel):
    """One run in a series."""

    model_config = ConfigDict(from_attributes=True)

    run_id: int
    status: str
    value: float | None
    basis: str | None
    change_pct: float | None
    failure_reason: str | None
    commit: CommitOut

    @model_validator(mode="before")
    @classmethod
    def _nest_commit(cls, point: Any) -> Any:
        """A :class:`SeriesPoint` holds its commit's fields flat (``commit_sha``, ...); here they nest."""
        if not isinstance(point, SeriesPoint):
            return point
        commit = {
            "sha": point.commit_sha,
            "title": point.commit_title,
            "author": point.commit_author,
            "committed_at": point.committed_at,
            "committed_at_estimated": point.committed_at_estimated,
        }
        return {**vars(point), "commit": commit}


class SeriesOut(BaseModel):
    """A case × hardware × metric series, runs in commit order (oldest first)."""

    model_config = ConfigDict(from_attributes=True)

    case: str = Field(validation_alias=AliasPath("case", "slug"))
    case_version: int = Field(validation_alias=AliasPath("case", "version"))
    hardware: str
    metric: str
    unit: str
    threshold_pct: float
    total_runs: int = Field(validation_alias="total")
    points: list[SeriesPointOut]


class ChartPointOut(BaseModel):
    """One run drawn on the series chart: x is the commit time, y the run's value."""

    model_config = ConfigDict(from_attributes=True)

    run_id: int
    kind: str  # nightly, confirm, bisect, pr, manual, import (or job without its job row)
    status: str
    value: float | None
    iqr: float | None
    excluded_reason: str | None
    flag: str | None = None  # contention, gpu_throttled, cpu_steal: excluded for its measuring conditions
    sha: str = Field(validation_alias="commit_sha")
    title: str = Field(validation_alias="commit_title")
    author: str = Field(validation_alias="commit_author")
    committed_at: dt.datetime


class ChartCommitOut(BaseModel):
    """A commit an alert points at."""

    model_config = ConfigDict(from_attributes=True)

    sha: str
    title: str
    author: str
    committed_at: dt.datetime


class ChartAlertOut(BaseModel):
    """An alert placed at its first-bad commit."""

    model_config = ConfigDict(from_attributes=True)

    id: int = Field(validation_alias="alert_id")
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


class ChartBandOut(BaseModel):
    """The threshold band around the current level."""

    model_config = ConfigDict(from_attributes=True)

    level: float
    low: float
    high: float
    pct: float
    since: dt.datetime | None
    description: str


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
            metric=data.metric,
            unit=data.unit,
            threshold=chart.threshold.describe(),
            total_runs=data.total,
            points=[
                ChartPointOut.model_validate(point).model_copy(update={"flag": chart.flags.get(point.run_id)})
                for point in data.points
            ],
            band=ChartBandOut.model_validate(chart.band) if chart.band else None,
            alerts=[ChartAlertOut.model_validate(alert) for alert in chart.alerts],
        )
