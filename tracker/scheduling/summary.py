"""What the nightly page and ``GET /api/v1/nightly`` show: per schedule, its latest runs, what
they queued, which jobs failed, and the alerts created since each run with how each reads (state
and figure, :mod:`tracker.views.alert_display`) and why each changed (their diagnoses), both read
for the whole page at once."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tracker.diagnosis.facts import Finding
from tracker.diagnosis.loading import alert_diagnoses
from tracker.enums import JobReason, JobState
from tracker.models import Alert, Candidate, Case, Commit, Job, NightlyRun
from tracker.views.alert_display import AlertDisplay, alert_displays


@dataclass(frozen=True)
class FailedJob:
    """A nightly job that failed: which series and why."""

    job_id: int
    case_slug: str
    hardware: str
    reason: str


@dataclass
class NightlyRunView:
    """One nightly run with its jobs' progress and the alerts that followed it."""

    run: NightlyRun
    commit_title: str = ""
    jobs_by_state: dict[str, int] = field(default_factory=dict)
    failed_jobs: list[FailedJob] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    diagnoses: dict[int, list[Finding]] = field(default_factory=dict)  # by alert id
    displays: dict[int, AlertDisplay] = field(default_factory=dict)  # by alert id

    @property
    def ok(self) -> bool:
        """No error and no failed job."""
        return self.run.error is None and not self.failed_jobs


@dataclass
class ScheduleSummary:
    """A schedule's latest runs, newest first."""

    schedule: str
    runs: list[NightlyRunView]


def nightly_summary(
    *, session: Session, runs_per_schedule: int = 5, alert_limit: int = 50
) -> list[ScheduleSummary]:
    """Every schedule that has fired, by name, with its latest ``runs_per_schedule`` runs."""
    names = session.scalars(select(NightlyRun.schedule).distinct().order_by(NightlyRun.schedule)).all()
    summaries = []
    for name in names:
        runs = session.scalars(
            select(NightlyRun)
            .where(NightlyRun.schedule == name)
            .order_by(NightlyRun.fired_at.desc(), NightlyRun.id.desc())
            .limit(runs_per_schedule)
        ).all()
        views = []
        until: dt.datetime | None = None
        for run in runs:  # newest first: each run owns the alerts created until the next one
            views.append(_view(session=session, run=run, until=until, alert_limit=alert_limit))
            until = run.fired_at
        summaries.append(ScheduleSummary(schedule=name, runs=views))
    _diagnose(session, [view for summary in summaries for view in summary.runs])
    return summaries


def _diagnose(session: Session, views: list[NightlyRunView]) -> None:
    """Every listed alert's diagnosis and display, in one set of queries for all the views."""
    alerts = {alert.id: alert for view in views for alert in view.alerts}
    if not alerts:
        return
    found = alert_diagnoses(session=session, alerts=list(alerts.values()))
    displays = alert_displays(session=session, alerts=list(alerts.values()))
    for view in views:
        view.diagnoses = {alert.id: found.get(alert.id, []) for alert in view.alerts}
        view.displays = {alert.id: displays[alert.id] for alert in view.alerts}


def nightly_run_view(*, session: Session, run: NightlyRun, alert_limit: int = 50) -> NightlyRunView:
    """One nightly with its jobs and the alerts created until the next nightly of its schedule."""
    until = session.scalar(
        select(NightlyRun.fired_at)
        .where(NightlyRun.schedule == run.schedule, NightlyRun.fired_at > run.fired_at)
        .order_by(NightlyRun.fired_at)
        .limit(1)
    )
    view = _view(session=session, run=run, until=until, alert_limit=alert_limit)
    _diagnose(session, [view])
    return view


def _view(
    *, session: Session, run: NightlyRun, until: dt.datetime | None, alert_limit: int
) -> NightlyRunView:
    view = NightlyRunView(run=run)
    suite = (run.details or {}).get("suite")
    if run.commit_sha and run.repository_id is not None:
        commit = session.scalar(
            select(Commit).where(Commit.repository_id == run.repository_id, Commit.sha == run.commit_sha)
        )
        if commit is not None:
            view.commit_title = commit.title
            jobs = session.scalars(
                select(Job)
                .join(Candidate, Candidate.id == Job.candidate_id)
                .where(
                    Candidate.base_commit_id == commit.id,
                    Candidate.is_plain,
                    Job.reason == JobReason.NIGHTLY,
                )
                .options(selectinload(Job.case), selectinload(Job.hardware_kind))
                .order_by(Job.id)
            ).all()
            view.jobs_by_state = dict(Counter(job.state.value for job in jobs))
            view.failed_jobs = [
                FailedJob(
                    job_id=job.id,
                    case_slug=job.case.slug,
                    hardware=job.hardware_kind.name,
                    reason=job.failure_reason or "",
                )
                for job in jobs
                if job.state is JobState.FAILED
            ]
    query = (
        select(Alert)
        .join(Case, Case.id == Alert.case_id)
        .where(Alert.created_at >= run.fired_at)
        .options(selectinload(Alert.case), selectinload(Alert.hardware_kind))
        .order_by(Alert.created_at.desc(), Alert.id.desc())
        .limit(alert_limit)
    )
    if until is not None:
        query = query.where(Alert.created_at < until)
    if isinstance(suite, str):
        query = query.where(Case.suite == suite)
    view.alerts = list(session.scalars(query))
    return view
