"""Prometheus metrics: what this process counted, and what the database says at scrape time.

Two kinds of figures, kept apart on purpose because production runs several server processes
behind one load balancer:

* **From the database** (:class:`DatabaseCollector`), queried at every scrape with a few small,
  indexed queries: the queue depth by hardware kind and state, leases overdue, failed runs by
  reason. Every process reports the same values, so aggregate them with ``max``, never ``sum``.
* **Per process** (:data:`PROCESS_REGISTRY`): results ingested, lease expiries, webhook outcomes,
  detection time, HTTP requests and their latency. Each process counts what it did itself; sum
  them over the scrape targets (``sum(rate(perftrack_results_ingested_total[5m]))``). They start
  at zero when a process starts, which Prometheus' ``rate`` handles as a counter reset.

No label carries anything secret or unbounded: hardware kind names, fixed outcome and reason
classes, route templates (``/api/v1/runs/{run_id}``, never the path itself).
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, sessionmaker

from tracker.enums import PENDING_JOB_STATES, JobReason, JobState, RunSource, RunStatus
from tracker.models import HardwareKind, Job, PendingEvaluation, Run, utcnow

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# Everything this process counts; the web app serves it beside its own database collector.
PROCESS_REGISTRY = CollectorRegistry()
ProcessCollector(registry=PROCESS_REGISTRY)  # CPU seconds, memory, open files of this process

RESULTS_INGESTED = Counter(
    "perftrack_results_ingested",
    "Results stored by this process (a repeated upload of a stored result is not counted).",
    ["source", "status"],
    registry=PROCESS_REGISTRY,
)
LEASE_EXPIRIES = Counter(
    "perftrack_lease_expiries",
    "Job leases this process found expired (no heartbeat) and put back in the queue or failed.",
    registry=PROCESS_REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "perftrack_github_webhook_deliveries",
    "GitHub webhook deliveries answered by this process, by outcome.",
    ["outcome"],
    registry=PROCESS_REGISTRY,
)
DETECTION_SECONDS = Histogram(
    "perftrack_detection_seconds",
    "Time spent in change detection: one series evaluated, or a whole sweep over every series.",
    ["scope"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0),
    registry=PROCESS_REGISTRY,
)
HTTP_REQUESTS = Counter(
    "perftrack_http_requests",
    "HTTP requests answered by this process, by method, route template and status code.",
    ["method", "route", "status"],
    registry=PROCESS_REGISTRY,
)
HTTP_REQUEST_SECONDS = Histogram(
    "perftrack_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response, by method and route template.",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=PROCESS_REGISTRY,
)

# Request methods counted by name; any other (a client may invent XMETHOD1, XMETHOD2, ...) is
# counted as "other", so no client can grow the number of series.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"

WEBHOOK_OUTCOMES = (
    "accepted",
    "duplicate",
    "ping",
    "ignored",
    "refused",
    "rejected",
    "bad_signature",
    "bad_request",
    "not_configured",
    "error",
)

# Failed runs are counted by class, not by their free-text reason: (class, SQL LIKE pattern), first
# match wins. The patterns are the beginnings of the reasons the runner agent writes.
FAILURE_CLASSES: tuple[tuple[str, str], ...] = (
    ("timeout", "timed out after%"),
    ("killed", "killed by%"),
    ("exit_code", "exited with code%"),
    ("build", "candidate build failed%"),
    # The candidate's command line cannot express the case (an option it lacks): no benchmark ran.
    ("setup", "setup failed%"),
    ("start", "could not start%"),
    ("server", "server %"),
    ("cancelled", "cancelled by the runner%"),
    ("no_output", "the benchmark printed nothing%"),
    ("unreadable_output", "unreadable output%"),
    ("runner_error", "runner error%"),
    ("unsupported", "this runner has no %"),
)
OTHER_FAILURE = "other"

# Every known label value starts at 0, so a rate is defined before the first event and dashboards
# tell "none yet" from "not scraped".
for _source in RunSource:
    for _status in RunStatus:
        RESULTS_INGESTED.labels(source=_source.value, status=_status.value)
for _outcome in WEBHOOK_OUTCOMES:
    WEBHOOK_DELIVERIES.labels(outcome=_outcome)


def record_result(*, source: str, status: str) -> None:
    """Count one newly stored result."""
    RESULTS_INGESTED.labels(source=source, status=status).inc()


def record_lease_expiries(count: int) -> None:
    """Count leases found expired by this process."""
    if count:
        LEASE_EXPIRIES.inc(count)


def record_webhook(outcome: str) -> None:
    """Count one webhook delivery by outcome (one of :data:`WEBHOOK_OUTCOMES`)."""
    WEBHOOK_DELIVERIES.labels(outcome=outcome if outcome in WEBHOOK_OUTCOMES else "error").inc()


def record_request(*, method: str, route: str, status: int, seconds: float) -> None:
    """Count one HTTP request and observe its latency (an unknown method is counted as ``other``)."""
    method = method if method in HTTP_METHODS else OTHER_METHOD
    HTTP_REQUESTS.labels(method=method, route=route, status=str(status)).inc()
    HTTP_REQUEST_SECONDS.labels(method=method, route=route).observe(seconds)


def timed_detection(scope: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a detection function so its wall time lands in :data:`DETECTION_SECONDS`."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        histogram = DETECTION_SECONDS.labels(scope=scope)

        @functools.wraps(function)
        def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - started)

        return timed

    return decorate


def failure_class() -> ColumnElement[str]:
    """SQL expression naming the class of a failed run's reason (see :data:`FAILURE_CLASSES`)."""
    return case(
        *((Run.failure_reason.like(pattern), label) for label, pattern in FAILURE_CLASSES),
        else_=OTHER_FAILURE,
    )


@dataclass(frozen=True)
class QueueDepth:
    """Queued and leased jobs of one hardware kind, in all and by reason."""

    hardware: str
    queued: int
    leased: int
    queued_by_reason: dict[JobReason, int]


def queue_depth(*, session: Session) -> list[QueueDepth]:
    """Pending jobs per hardware kind that has any, split by reason (the jobs page, ``perftrack_jobs``)."""
    rows = session.execute(
        select(HardwareKind.name, Job.state, Job.reason, func.count())
        .join(HardwareKind, Job.hardware_kind_id == HardwareKind.id)
        .where(Job.state.in_(PENDING_JOB_STATES))
        .group_by(HardwareKind.name, Job.state, Job.reason)
    ).all()
    queued: collections.Counter[str] = collections.Counter()
    leased: collections.Counter[str] = collections.Counter()
    by_reason: dict[str, collections.Counter[JobReason]] = {}
    for hardware, state, reason, count in rows:
        if state is JobState.QUEUED:
            queued[hardware] += count
            by_reason.setdefault(hardware, collections.Counter())[reason] += count
        else:
            leased[hardware] += count
    return [
        QueueDepth(
            hardware=hardware,
            queued=queued[hardware],
            leased=leased[hardware],
            queued_by_reason=dict(sorted(by_reason.get(hardware, collections.Counter()).items())),
        )
        for hardware in sorted(set(queued) | set(leased))
    ]


def _jobs_by_state(session: Session) -> dict[tuple[str, JobState], int]:
    """Queued and leased jobs per (hardware kind, state); every kind appears, with zeros."""
    counts = {
        (name, state): 0
        for name in session.scalars(select(HardwareKind.name))
        for state in PENDING_JOB_STATES
    }
    for entry in queue_depth(session=session):
        counts[(entry.hardware, JobState.QUEUED)] = entry.queued
        counts[(entry.hardware, JobState.LEASED)] = entry.leased
    return counts


def overdue_leases(*, session: Session, now: dt.datetime) -> int:
    """Leased jobs whose lease has run out but that no one has expired yet."""
    count = session.scalar(
        select(func.count()).select_from(Job).where(Job.state == JobState.LEASED, Job.lease_expires_at < now)
    )
    return int(count or 0)


def failed_runs_by_class(*, session: Session) -> dict[str, int]:
    """Stored failed runs per failure class; every class appears, with zeros."""
    counts = {label: 0 for label, _pattern in FAILURE_CLASSES}
    counts[OTHER_FAILURE] = 0
    label = failure_class()
    rows = session.execute(
        select(label, func.count()).where(Run.status == RunStatus.FAILED).group_by(label)
    ).all()
    for name, count in rows:
        counts[str(name)] = int(count)
    return counts


class DatabaseCollector(Collector):
    """Figures read from the database at scrape time, identical whichever process is scraped."""

    def __init__(self, sessions: sessionmaker[Session], now: Callable[[], dt.datetime] = utcnow) -> None:
        self.sessions = sessions
        self.now = now

    def describe(self) -> Iterable[Metric]:
        """The families, without querying (registration must not touch the database)."""
        return list(self._families())

    def collect(self) -> Iterable[Metric]:
        """Query the database; on failure report ``perftrack_database_up 0`` and nothing else from it."""
        depth_family, overdue_family, failed_family, up_family, pending_family = self._families()
        try:
            with self.sessions() as session:
                depth = _jobs_by_state(session)
                overdue = overdue_leases(session=session, now=self.now())
                failed = failed_runs_by_class(session=session)
                waiting = _series_waiting(session)
        except Exception:  # a scrape reports what it can; the process metrics still go out
            logger.warning("metrics: database query failed", exc_info=True)
            up_family.add_metric([], 0)
            return [up_family]
        for (hardware, state), count in sorted(depth.items()):
            depth_family.add_metric([hardware, state.value], count)
        overdue_family.add_metric([], overdue)
        for reason, count in sorted(failed.items()):
            failed_family.add_metric([reason], count)
        up_family.add_metric([], 1)
        pending_family.add_metric([], waiting)
        return [depth_family, overdue_family, failed_family, up_family, pending_family]

    @staticmethod
    def _families() -> tuple[
        GaugeMetricFamily, GaugeMetricFamily, CounterMetricFamily, GaugeMetricFamily, GaugeMetricFamily
    ]:
        return (
            GaugeMetricFamily(
                "perftrack_jobs",
                "Jobs waiting (queued) or running (leased), by hardware kind; from the database.",
                labels=["hardware", "state"],
            ),
            GaugeMetricFamily(
                "perftrack_leases_overdue",
                "Leased jobs past their lease expiry, not yet put back in the queue; from the database.",
            ),
            CounterMetricFamily(
                "perftrack_runs_failed",
                "Stored failed runs by failure class; from the database.",
                labels=["reason"],
            ),
            GaugeMetricFamily(
                "perftrack_database_up",
                "1 when the scrape could read the database, 0 when it could not.",
            ),
            GaugeMetricFamily(
                "perftrack_detection_pending_series",
                "Series whose new runs wait for deferred detection; from the database.",
            ),
        )


class _Forward(Collector):
    """Hands the process registry's metrics to another registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        """Everything the wrapped registry collects."""
        return iter(self.registry.collect())


def app_registry(sessions: sessionmaker[Session]) -> CollectorRegistry:
    """One app's registry: this process' counters and a database collector on ``sessions``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Forward(PROCESS_REGISTRY))
    registry.register(DatabaseCollector(sessions))
    return registry


def _series_waiting(session: Session) -> int:
    """Series marked for the scheduler's deferred evaluation (see :mod:`tracker.series.pending`)."""
    return int(session.scalar(select(func.count()).select_from(PendingEvaluation)) or 0)
