"""What the nightly page and ``GET /api/v1/nightly`` show: per schedule, its latest runs, what
they queued, which jobs failed, and the alerts created since each run with how each reads (state
and figure, :mod:`tracker.views.alert_display`) and why each changed (their diagnoses), both read
for the whole page at once."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from tracker.detection.triage import in_state
from tracker.diagnosis.facts import Finding
from tracker.diagnosis.loading import alert_diagnoses
from tracker.enums import AlertState, AlertStatus, JobReason, JobState
from tracker.errors import NotFound
from tracker.models import Alert, AlertEvent, Candidate, Case, Commit, Job, NightlyRun
from tracker.notifications.events import NightlyFacts
from tracker.views.alert_display import AlertDisplay, alert_displays

_FIXED_SHOWN = 20


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
    measured: list[tuple[str, str]] = field(default_factory=list)  # (case slug, hardware), sorted
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
            view.measured = sorted({(job.case.slug, job.hardware_kind.name) for job in jobs})
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


@dataclass
class NightSummary:
    """One night as its page and its ``nightly.summary`` notification both tell it: what ran
    (``view``: the series measured, the jobs by state, the failures), what changed (the alerts
    created that night), what is still open and what got fixed since the nightly before."""

    view: NightlyRunView
    open_alerts: int
    fixed: list[Alert]

    def facts(self) -> NightlyFacts:
        """The notification's content, line for line what the page shows."""
        return NightlyFacts(
            jobs_by_state=dict(self.view.jobs_by_state),
            failed=len(self.view.failed_jobs),
            changed=[alert_line(alert) for alert in self.view.alerts],
            open_alerts=self.open_alerts,
            fixed=[alert_line(alert) for alert in self.fixed],
        )


def night_summary(*, session: Session, view: NightlyRunView) -> NightSummary:
    """The summary of the night ``view`` shows (see :func:`nightly_run_view`)."""
    open_alerts = session.scalar(select(func.count(Alert.id)).where(*in_state(AlertState.OPEN))) or 0
    fixed = _fixed_since(session, _previous_fire(session, view.run))
    return NightSummary(view=view, open_alerts=open_alerts, fixed=fixed)


def get_night(*, session: Session, run_id: int) -> NightSummary:
    """The summary of nightly run ``run_id``; :class:`NotFound` when there is none."""
    run = session.get(NightlyRun, run_id)
    if run is None:
        raise NotFound(f"no nightly run {run_id}")
    return night_summary(session=session, view=nightly_run_view(session=session, run=run))


def list_nights(*, session: Session, limit: int) -> list[NightlyRun]:
    """Every schedule's nightly runs, newest first."""
    return list(
        session.scalars(
            select(NightlyRun).order_by(NightlyRun.fired_at.desc(), NightlyRun.id.desc()).limit(limit)
        )
    )


def alert_line(alert: Alert) -> str:
    """An alert in one line: its id, direction, size, case and hardware."""
    return (
        f"alert {alert.id}: {alert.direction.value} {alert.change_pct:+.1f} % on "
        f"{alert.case.slug} / {alert.hardware_kind.name}"
    )


def _previous_fire(session: Session, run: NightlyRun) -> dt.datetime:
    """When the schedule fired before ``run`` (a day before it for the first)."""
    previous = session.scalar(
        select(NightlyRun.fired_at)
        .where(NightlyRun.schedule == run.schedule, NightlyRun.fired_at < run.fired_at)
        .order_by(NightlyRun.fired_at.desc())
        .limit(1)
    )
    return previous or run.fired_at - dt.timedelta(days=1)


def _fixed_since(session: Session, since: dt.datetime) -> list[Alert]:
    """The alerts that became fixed since ``since`` (at most ``_FIXED_SHOWN``)."""
    return list(
        session.scalars(
            select(Alert)
            .join(AlertEvent, AlertEvent.alert_id == Alert.id)
            .where(
                AlertEvent.to_status == AlertStatus.FIXED,
                AlertEvent.from_status != AlertStatus.FIXED,
                AlertEvent.created_at >= since,
                Alert.status == AlertStatus.FIXED,
            )
            .options(selectinload(Alert.case), selectinload(Alert.hardware_kind))
            .order_by(Alert.id)
            .distinct()
            .limit(_FIXED_SHOWN)
        )
    )
