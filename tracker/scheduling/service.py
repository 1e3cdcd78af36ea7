"""The scheduler service: leader election plus an APScheduler ``BackgroundScheduler``.

Every process that runs the service (each web worker with ``scheduler_enabled``, or
``perftrack scheduler``) tries to become leader every ``retry_s`` seconds; only the leader runs a
scheduler. The nightly jobs live in the tracker's database (``apscheduler_jobs``, job id = the
schedule's name): a restart or a new leader finds them with their next fire time, so a fire is
neither lost nor doubled. A job already stored with the same trigger is kept as it is (re-adding
it would move its next fire time past a fire missed while no leader ran); on start the scheduler
runs such a missed fire once (``coalesce``) when it is no older than ``misfire_grace``.
The interval tasks (lease expiry, detection sweep, evidence runs to read, GitHub deliveries and
outbox, calibrations) live in memory.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Sequence

from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
from apscheduler.jobstores.memory import MemoryJobStore  # type: ignore[import-untyped]
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]
from apscheduler.triggers.base import BaseTrigger  # type: ignore[import-untyped]
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.catalog.suites import ResolvedSchedule, load_suites
from tracker.github.client import GithubClient, client_from_settings
from tracker.github.inbox import process_pending, prune_deliveries
from tracker.github.outbox import FlushReport, flush_outbox
from tracker.models import NightlyRun, utcnow
from tracker.scheduling.leader import Leader, make_leader
from tracker.scheduling.nightly import fire_nightly
from tracker.scheduling.nightly_notices import send_notifications
from tracker.scheduling.periodic import schedule_calibrations
from tracker.scheduling.report import report_finished_nightlies
from tracker.settings import Settings, TrackingIssue
from tracker.vcs.branch_head import BranchResolver, ls_remote_head
from tracker.vcs.history import GitHistory
from tracker.workflows import bisections, evidence_reading, reactions
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.sweep import sweep

logger = logging.getLogger("perftrack.scheduler")

JOB_TABLE = "apscheduler_jobs"
NIGHTLY_STORE = "default"
PERIODIC_STORE = "memory"
JOB_FUNC = "tracker.scheduling.service:run_schedule"
MISFIRE_GRACE = dt.timedelta(hours=12)
PENDING_INTERVAL_S = 5.0  # series marked by uploads under deferred detection wait at most this long

# The service leading in this process: stored jobs name a function, not an object, so the
# function finds the service here. Only a leader sets it, and one process leads at a time.
_leading: SchedulerService | None = None
_leading_lock = threading.Lock()


def run_schedule(name: str) -> None:
    """APScheduler's entry point for a stored nightly job (by schedule name)."""
    with _leading_lock:
        service = _leading
    if service is None:
        logger.warning("schedule %s fired with no leading scheduler in this process", name)
        return
    service.fire(name)


def previous_fire_time(trigger: BaseTrigger, now: dt.datetime) -> dt.datetime | None:
    """The latest fire time of ``trigger`` at or before ``now`` (what a coalesced run stands for)."""
    for window in (
        dt.timedelta(minutes=2),
        dt.timedelta(hours=2),
        dt.timedelta(days=2),
        dt.timedelta(days=32),
    ):
        fire: dt.datetime | None = trigger.get_next_fire_time(None, now - window)
        if fire is None or fire > now:
            continue
        while True:
            following: dt.datetime | None = trigger.get_next_fire_time(
                fire, fire + dt.timedelta(microseconds=1)
            )
            if following is None or following > now:
                return fire.astimezone(dt.UTC)
            fire = following
    return None


class SchedulerService:
    """Elects a leader among processes; the leader runs the nightlies and the periodic tasks."""

    def __init__(
        self,
        *,
        engine: Engine,
        schedules: Sequence[ResolvedSchedule],
        leader: Leader,
        settings: Settings | None = None,
        history: GitHistory | None = None,
        resolver: BranchResolver = ls_remote_head,
        sweep_interval_s: float = 60.0,
        lease_sweep_s: float = 30.0,
        calibration_interval_days: int = 0,
        retry_s: float = 5.0,
        misfire_grace: dt.timedelta = MISFIRE_GRACE,
        trigger_for: Callable[[ResolvedSchedule], BaseTrigger] | None = None,
        periodic: bool = True,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.engine = engine
        self.sessions: sessionmaker[Session] = db.make_session_factory(engine)
        self.read_sessions: sessionmaker[Session] = db.make_session_factory(engine, write=False)
        self.schedules = {schedule.name: schedule for schedule in schedules}
        self.leader = leader
        self.settings = settings
        self.telling = settings.culprit_telling() if settings else None  # no settings: never
        self.history = history
        self.resolver = resolver
        self.sweep_interval_s = sweep_interval_s
        self.lease_sweep_s = lease_sweep_s
        self.calibration_interval_days = calibration_interval_days
        self.retry_s = retry_s
        self.misfire_grace = misfire_grace
        self.trigger_for = trigger_for or (lambda schedule: schedule.trigger())
        self.periodic = periodic
        self.clock = clock
        self.scheduler: BackgroundScheduler | None = None
        self._github: GithubClient | None = None  # one client, so installation tokens are reused
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine) -> SchedulerService:
        """The service as ``create_app`` and ``perftrack scheduler`` run it."""
        suites = load_suites(settings.suite_dir) if settings.suite_dir.is_dir() else []
        return cls(
            engine=engine,
            schedules=[schedule for suite in suites for schedule in suite.schedules],
            leader=make_leader(settings.effective_database_url, data_dir=settings.data_dir),
            settings=settings,
            history=GitHistory(settings.git_cache_dir),
            sweep_interval_s=settings.sweep_interval_s,
            lease_sweep_s=min(settings.sweep_interval_s, max(5, settings.lease_seconds // 2)),
            calibration_interval_days=settings.calibration_interval_days,
        )

    # --- life cycle -------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this service runs the scheduler now."""
        return self.scheduler is not None

    def start(self) -> None:
        """Start electing in a background thread (returns at once)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._elect, name="perftrack-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop scheduling and give up leadership; waits for a running task to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._step_down()

    def _elect(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:  # the election loop must outlive a database hiccup
                logger.exception("scheduler election step failed")
            self._stop.wait(self.retry_s)

    def step(self) -> None:
        """One election round: become leader if possible, step down if the lock was lost."""
        if self.scheduler is None:
            if self.leader.acquire():
                logger.info("scheduler: this process leads")
                try:
                    self._lead()
                except Exception:
                    self._step_down()
                    raise
        elif not self.leader.is_held():
            logger.warning("scheduler: leadership lost")
            self._step_down()

    def _lead(self) -> None:
        global _leading
        scheduler = BackgroundScheduler(
            jobstores={
                NIGHTLY_STORE: SQLAlchemyJobStore(engine=self.engine, tablename=JOB_TABLE),
                PERIODIC_STORE: MemoryJobStore(),
            },
            executors={"default": ThreadPoolExecutor(2)},
            job_defaults={"coalesce": True, "max_instances": 1},
            timezone=dt.UTC,
        )
        scheduler.start(paused=True)
        self.scheduler = scheduler
        with _leading_lock:
            _leading = self
        self._sync_nightly_jobs(scheduler)
        if self.periodic:
            self._add_periodic_jobs(scheduler)
        scheduler.resume()  # runs a stored fire missed while no one led, once (coalesce)

    def _step_down(self) -> None:
        global _leading
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            scheduler.shutdown(wait=True)
        with _leading_lock:
            if _leading is self:
                _leading = None
        self.leader.release()

    def _sync_nightly_jobs(self, scheduler: BackgroundScheduler) -> None:
        grace = int(self.misfire_grace.total_seconds())
        for name, schedule in self.schedules.items():
            trigger = self.trigger_for(schedule)
            stored = scheduler.get_job(name, jobstore=NIGHTLY_STORE)
            if (
                stored is not None
                and repr(stored.trigger) == repr(trigger)
                and stored.func_ref == JOB_FUNC
                and stored.misfire_grace_time == grace
            ):
                continue  # keep its next fire time, even one in the past
            scheduler.add_job(
                JOB_FUNC,
                trigger=trigger,
                args=[name],
                id=name,
                name=f"nightly {name}",
                jobstore=NIGHTLY_STORE,
                replace_existing=True,
                misfire_grace_time=grace,
                coalesce=True,
                max_instances=1,
            )
        for job in scheduler.get_jobs(jobstore=NIGHTLY_STORE):
            if job.id not in self.schedules:
                logger.info("scheduler: removing job %s (no such schedule any more)", job.id)
                job.remove()

    def _add_periodic_jobs(self, scheduler: BackgroundScheduler) -> None:
        tasks: list[tuple[str, Callable[[], object], float]] = [
            ("expire-leases", self.expire_leases, self.lease_sweep_s),
            ("detection-sweep", self.detection_sweep, self.sweep_interval_s),
            ("pending-detection", self.evaluate_pending, PENDING_INTERVAL_S),
            ("bisections", self.start_bisections, PENDING_INTERVAL_S),
            ("evidence", self.summarize_evidence, PENDING_INTERVAL_S),
            ("nightly-report", self.report_nightlies, self.sweep_interval_s),
            ("github-deliveries", self.process_deliveries, PENDING_INTERVAL_S),
            ("github-outbox", self.flush_outbox, min(self.sweep_interval_s, 30.0)),
            ("notifications", lambda: send_notifications(self), 10.0),
        ]
        if self.calibration_interval_days > 0:
            tasks.append(("calibrations", self.calibrate, 3600.0))
        for name, func, seconds in tasks:
            scheduler.add_job(
                func,
                "interval",
                seconds=seconds,
                id=name,
                jobstore=PERIODIC_STORE,
                replace_existing=True,
                misfire_grace_time=None,
            )

    def fire(self, name: str, *, now: dt.datetime | None = None) -> NightlyRun | None:
        """Run one nightly schedule now; the record is committed."""
        schedule = self.schedules.get(name)
        if schedule is None:
            logger.warning("scheduler: no schedule named %s", name)
            return None
        now = now or self.clock()
        # The stored job's trigger knows the fire times (an interval trigger's start, say).
        scheduler = self.scheduler
        stored = scheduler.get_job(name, jobstore=NIGHTLY_STORE) if scheduler is not None else None
        trigger = stored.trigger if stored is not None else self.trigger_for(schedule)
        scheduled_for = previous_fire_time(trigger, now)
        with db.session_scope(self.sessions) as session:
            run = fire_nightly(
                session=session,
                schedule=schedule,
                now=now,
                history=self.history,
                resolver=self.resolver,
                scheduled_for=scheduled_for,
            )
        if run.error:
            logger.warning("nightly %s: %s", name, run.error)
        else:
            logger.info("nightly %s: %s, %d jobs queued", name, run.commit_sha, run.jobs_queued)
        return run

    def expire_leases(self) -> int:
        """Requeue (or fail) jobs whose lease ran out."""
        with db.session_scope(self.sessions) as session:
            return len(workflow_jobs.expire(session=session, now=self.clock(), telling=self.telling))

    def detection_sweep(self) -> int:
        """Evaluate every series for changes; returns the alerts touched."""
        with db.session_scope(self.sessions) as session:
            report = sweep(session=session, now=self.clock(), telling=self.telling)
        self.start_bisections()
        return len(report.alerts_touched)

    def evaluate_pending(self) -> int:
        """Evaluate the series uploads marked (deferred detection); returns the alerts touched."""
        with db.session_scope(self.sessions) as session:
            moved = reactions.evaluate_pending_series(session=session, now=self.clock(), telling=self.telling)
        self.start_bisections()
        return len(moved)

    def start_bisections(self) -> int:
        """Start the bisections waiting for their range to be listed from git (no transaction open
        while git runs); returns how many started or were found unavailable."""
        return bisections.start_queued(sessions=self.sessions, history=self.history, clock=self.clock)

    def summarize_evidence(self) -> int:
        """Read the evidence runs uploads linked and no follow-up read; returns how many were stored."""
        return evidence_reading.summarize_pending(
            sessions=self.sessions, read_sessions=self.read_sessions, clock=self.clock, telling=self.telling
        )

    def github_client(self) -> GithubClient | None:
        """The GitHub client the settings describe (made once); ``None`` without credentials."""
        if self._github is None and self.settings is not None:
            self._github = client_from_settings(self.settings)
        return self._github

    def process_deliveries(self) -> list[str]:
        """Carry out the webhook deliveries still pending, and forget old handled ones."""
        client = self.github_client()
        if client is None or self.settings is None:
            return []
        now = self.clock()
        outcomes = process_pending(
            sessions=self.sessions,
            read_sessions=self.read_sessions,
            settings=self.settings,
            client=client,
            now=now,
        )
        keep = dt.timedelta(days=self.settings.github_delivery_retention_days)
        with db.session_scope(self.sessions) as session:
            prune_deliveries(session=session, now=now, keep=keep)
        return outcomes

    def flush_outbox(self) -> FlushReport | None:
        """Send the GitHub outbox (nothing without GitHub credentials)."""
        client = self.github_client()
        if client is None or self.settings is None:
            return None
        with db.session_scope(self.sessions) as session:
            return flush_outbox(session=session, settings=self.settings, client=client, now=self.clock())

    def report_nightlies(self) -> list[int]:
        """Queue the tracking-issue comment of each nightly that ended (when an issue is configured)."""
        if self.settings is None or not self.settings.github_nightly_issue:
            return []
        issue = TrackingIssue.parse(self.settings.github_nightly_issue)
        with db.session_scope(self.sessions) as session:
            return report_finished_nightlies(
                session=session, issue=issue, now=self.clock(), public_url=self.settings.public_url
            )

    def calibrate(self) -> list[int]:
        """Queue the A/A calibrations that are due."""
        with db.session_scope(self.sessions) as session:
            return schedule_calibrations(
                session=session, now=self.clock(), interval_days=self.calibration_interval_days
            )

    def run_once(self) -> list[NightlyRun]:
        """Fire every schedule and run each periodic task once (``perftrack scheduler --once``)."""
        runs = [run for name in self.schedules if (run := self.fire(name)) is not None]
        if self.periodic:
            self.expire_leases()
            self.evaluate_pending()
            self.summarize_evidence()
            self.detection_sweep()
            self.report_nightlies()
            self.process_deliveries()
            self.flush_outbox()
            send_notifications(self)
            if self.calibration_interval_days > 0:
                self.calibrate()
        return runs
