"""Nightly runs as the JSON API shows them: per schedule, what ran, what failed and what changed since."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pydantic import BaseModel, Field

from tracker.detection.output_alerts import alert_kind, output_alert_view
from tracker.diagnosis.facts import Finding
from tracker.models import Alert, NightlyRun
from tracker.scheduling.summary import FailedJob, NightlyRunView, NightSummary, ScheduleSummary, alert_line
from tracker.views.alert_display import AlertDisplay
from web.schemas.alerts import AlertFigureOut, PairedEstimateOut, display_fields
from web.schemas.diagnosis import FindingOut


class NightlyAlertOut(BaseModel):
    """An alert created after a nightly run (and before the next one)."""

    id: int
    url: str
    case: str
    hardware: str
    direction: str
    change_pct: float = Field(description="detection's first estimate, %")
    kind: str = Field(default="speed", description="output (the seeded output changed) or speed")
    output_summary: str = Field(
        default="", description='output alerts: e.g. "output changed: PSNR 27.1 dB, …"'
    )
    status: str
    state: str = Field(description="as GET /api/v1/alerts says: never 'open' for a suspect")
    confirmation: str
    confirmation_reason: str = Field(default="", description="the paired rounds' reading or progress")
    figure: AlertFigureOut = Field(description="what lists show: the paired estimate when measured")
    paired_estimate: PairedEstimateOut | None = None
    created_at: dt.datetime
    diagnosis: list[FindingOut] = Field(
        default_factory=list, description="why it changed, most telling first (see GET /api/v1/alerts/{id})"
    )

    @classmethod
    def of(cls, alert: Alert, display: AlertDisplay, diagnosis: Sequence[Finding] = ()) -> NightlyAlertOut:
        """From the ORM object, with its display (state, figure, paired rounds) and diagnosis."""
        return cls(
            id=alert.id,
            url=f"/alerts/{alert.id}",
            case=alert.case.slug,
            hardware=alert.hardware_kind.name,
            direction=alert.direction.value,
            change_pct=alert.change_pct,
            kind=alert_kind(alert),
            output_summary=output.summary if (output := output_alert_view(alert)) else "",
            status=alert.status.value,
            **display_fields(alert, display),
            created_at=alert.created_at,
            diagnosis=[FindingOut.of(finding) for finding in diagnosis],
        )


class NightlyFailedJobOut(BaseModel):
    """A nightly job that failed."""

    job_id: int
    url: str
    case: str
    hardware: str
    reason: str

    @classmethod
    def of(cls, job: FailedJob) -> NightlyFailedJobOut:
        """From the summary's failed job."""
        return cls(
            job_id=job.job_id,
            url=f"/jobs?id={job.job_id}",
            case=job.case_slug,
            hardware=job.hardware,
            reason=job.reason,
        )


class NightlyRunOut(BaseModel):
    """One firing of a schedule."""

    id: int
    schedule: str
    fired_at: dt.datetime
    scheduled_for: dt.datetime | None
    branch: str
    commit_sha: str | None
    commit_title: str
    commit_url: str | None
    ok: bool = Field(description="no error and no failed job")
    error: str | None
    jobs_queued: int
    jobs_existing: int = Field(description="series already measured or queued for this commit")
    jobs_by_state: dict[str, int]
    backfilled: list[str] = Field(description="older commits queued as backfill")
    failed_jobs: list[NightlyFailedJobOut]
    alerts: list[NightlyAlertOut] = Field(description="alerts created since this run, newest first")

    @classmethod
    def of(cls, view: NightlyRunView) -> NightlyRunOut:
        """From the summary view."""
        run = view.run
        return cls(
            id=run.id,
            schedule=run.schedule,
            fired_at=run.fired_at,
            scheduled_for=run.scheduled_for,
            branch=run.branch,
            commit_sha=run.commit_sha,
            commit_title=view.commit_title,
            commit_url=f"/commits/{run.commit_sha}" if run.commit_sha else None,
            ok=view.ok,
            error=run.error,
            jobs_queued=run.jobs_queued,
            jobs_existing=run.jobs_existing,
            jobs_by_state=view.jobs_by_state,
            backfilled=[str(sha) for sha in run.backfilled],
            failed_jobs=[NightlyFailedJobOut.of(job) for job in view.failed_jobs],
            alerts=[
                NightlyAlertOut.of(alert, view.displays[alert.id], view.diagnoses.get(alert.id, ()))
                for alert in view.alerts
            ],
        )


class NightlyScheduleOut(BaseModel):
    """A schedule's latest runs, newest first."""

    schedule: str
    runs: list[NightlyRunOut]

    @classmethod
    def of(cls, summary: ScheduleSummary) -> NightlyScheduleOut:
        """From the summary of one schedule."""
        return cls(schedule=summary.schedule, runs=[NightlyRunOut.of(view) for view in summary.runs])


class NightOut(BaseModel):
    """A night in the list of nights."""

    id: int
    url: str = Field(description="its page")
    schedule: str
    fired_at: dt.datetime
    branch: str
    commit_sha: str | None
    error: str | None

    @classmethod
    def of(cls, run: NightlyRun) -> NightOut:
        """From the ORM object."""
        return cls(
            id=run.id,
            url=f"/nights/{run.id}",
            schedule=run.schedule,
            fired_at=run.fired_at,
            branch=run.branch,
            commit_sha=run.commit_sha,
            error=run.error,
        )


class MeasuredOut(BaseModel):
    """A series a night measured."""

    case: str
    hardware: str


class FixedAlertOut(BaseModel):
    """An alert fixed since the night before."""

    id: int
    url: str
    line: str = Field(description="as the nightly.summary notification says it")


class NightDetailOut(BaseModel):
    """One night, as its page and its nightly.summary notification tell it."""

    run: NightlyRunOut = Field(description="what ran and what changed (alerts created that night)")
    measured: list[MeasuredOut] = Field(description="the cases × hardware its nightly jobs measured")
    open_alerts: int = Field(description="alerts still open now")
    fixed: list[FixedAlertOut] = Field(description="alerts fixed since the night before")

    @classmethod
    def of(cls, summary: NightSummary) -> NightDetailOut:
        """From the night's summary."""
        return cls(
            run=NightlyRunOut.of(summary.view),
            measured=[MeasuredOut(case=case, hardware=hardware) for case, hardware in summary.view.measured],
            open_alerts=summary.open_alerts,
            fixed=[
                FixedAlertOut(id=alert.id, url=f"/alerts/{alert.id}", line=alert_line(alert))
                for alert in summary.fixed
            ],
        )
