"""Where the demo's time went: per job, and jobs per phase by what they were for.

Read from what the demo's runs uploaded and its jobs' timestamps, nothing measured twice:

* the runner's timings in each run's environment (``environment["timings"]``): the candidate build,
  the wait for a quiet moment and the workload (:mod:`runners.agent`), and the benchmark process's
  start-up, compile warmup and what came after it (:mod:`runners.workloads.phases`); the measured
  request is the run's ``e2e_ms``, what is left after it the saving of the output and the exit;
* the job's lease and finish (``leased_at``, ``finished_at``, the moment the tracker began to
  store the result): what the runner's timings leave of that span is the result's way there (the
  commit's git metadata, the payload, the upload);
* the demo's phases (the calibration, each night, the PR comparisons), each a window of the
  runner's wall time: what no job's span covers lies between jobs (the tracker storing the result
  and reacting to it: detection, the next jobs queued; the runner's next claim).

The queue wait (a job's ``queued`` to its lease) is shown apart: jobs queued together wait for
each other, so it does not add up with the rest.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import ComparisonKind, JobReason
from tracker.models import Comparison, Job, Run, RunArtifacts


class JobKind(StrEnum):
    """What a demo job was for (a re-run of a flagged run counts as a re-run, whatever its original)."""

    NIGHTLY = "nightly"
    CONFIRMATION = "confirmation"
    BISECTION = "bisection"
    COMPARISON = "comparison"
    CALIBRATION = "calibration"
    EVIDENCE = "evidence"
    RERUN = "re-run"
    OTHER = "other"


_BY_COMPARISON = {
    ComparisonKind.PR: JobKind.COMPARISON,
    ComparisonKind.CALIBRATION: JobKind.CALIBRATION,
    ComparisonKind.CONFIRMATION: JobKind.CONFIRMATION,
    ComparisonKind.BISECT: JobKind.BISECTION,
}
_BY_REASON = {
    JobReason.NIGHTLY: JobKind.NIGHTLY,
    JobReason.CONFIRM: JobKind.CONFIRMATION,
    JobReason.BISECT: JobKind.BISECTION,
    JobReason.EVIDENCE: JobKind.EVIDENCE,
    JobReason.PR: JobKind.COMPARISON,
}

# The parts of a job's span, in the order a job goes through them, as the table names them.
PARTS = (
    ("build", "candidate build (git worktree, patches)"),
    ("quiet_wait", "wait for a quiet moment"),
    ("startup", "process start (interpreter, imports, model)"),
    ("warmup", "compile warmup"),
    ("measured", "measured request"),
    ("teardown", "output saved, process exit"),
    ("process", "process (no warmup marks)"),
    ("runner", "runner's own work (probes, output check)"),
    ("upload", "result sent (git metadata, payload, upload)"),
)
IDLE = "idle"
IDLE_LABEL = "between jobs (the tracker storing and reacting, the next claim)"


@dataclass(frozen=True)
class Phase:
    """One stretch of the demo in which its runner drained the queue (UTC)."""

    name: str
    started_at: dt.datetime
    ended_at: dt.datetime

    @property
    def wall_s(self) -> float:
        """How long the stretch lasted, seconds."""
        return (self.ended_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class JobTiming:
    """One job: what it was for, when it was queued, leased and finished, and its span's parts (s)."""

    job_id: int
    kind: JobKind
    queued_at: dt.datetime
    leased_at: dt.datetime
    finished_at: dt.datetime
    parts: Mapping[str, float] = field(default_factory=dict)

    @property
    def queue_wait_s(self) -> float:
        """From queued to leased, seconds."""
        return max((self.leased_at - self.queued_at).total_seconds(), 0.0)


@dataclass(frozen=True)
class PhaseJobs:
    """The jobs one phase ran, counted by kind, and the phase's wall time."""

    phase: Phase
    counts: Mapping[JobKind, int]

    @property
    def jobs(self) -> int:
        """How many jobs the phase ran."""
        return sum(self.counts.values())


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds per part over every job (and the idle gaps), each part's per-job median, the phases."""

    total_s: Mapping[str, float]
    median_s: Mapping[str, float]
    phases: tuple[PhaseJobs, ...]
    wall_s: float
    queue_wait_median_s: float | None
    queue_wait_max_s: float | None


def job_parts(environment: Mapping[str, Any], e2e_ms: float | None, span_s: float) -> dict[str, float]:
    """Split one job's span (lease to finish, ``span_s`` seconds) into the parts of :data:`PARTS`.

    Parameters
    ----------
    environment
        The run's uploaded environment; ``timings`` holds the runner's figures (missing ones count 0).
    e2e_ms
        The measured request's end-to-end time, ms (``None``: unknown, all after the warmup counts).
    span_s
        The job's lease to its finish; what the runner's figures leave of it is the result's way to
        the tracker.
    """
    timings = _numbers(environment.get("timings"))
    conditions = environment.get("conditions")
    if isinstance(conditions, Mapping):  # a runner from before the timings: what its conditions say
        timings.setdefault("quiet_wait_s", _numbers(conditions.get("quiet_wait")).get("waited_s", 0.0))
        timings.setdefault("process_s", _numbers(conditions.get("cpu")).get("window_s", 0.0))
    parts = {"build": timings.get("build_s", 0.0), "quiet_wait": timings.get("quiet_wait_s", 0.0)}
    process = timings.get("process_s", 0.0)
    if "warmup_s" in timings:
        after = timings.get("after_warmup_s", 0.0)
        measured = min(e2e_ms / 1000.0, after) if e2e_ms else after
        parts.update(
            startup=timings.get("startup_s", 0.0),
            warmup=timings["warmup_s"],
            measured=measured,
            teardown=after - measured,
        )
    else:
        parts["process"] = process
    parts["runner"] = max(timings.get("workload_s", process) - process, 0.0)
    parts["upload"] = max(span_s - sum(parts.values()), 0.0)
    return parts


def job_kind(reason: JobReason, comparison: ComparisonKind | None, rerun: bool) -> JobKind:
    """What a job was for: a re-run first, then its comparison's kind, then its reason."""
    if rerun:
        return JobKind.RERUN
    if comparison is not None:
        return _BY_COMPARISON.get(comparison, JobKind.OTHER)
    return _BY_REASON.get(reason, JobKind.OTHER)


def breakdown(jobs: Sequence[JobTiming], phases: Sequence[Phase]) -> TimeBreakdown:
    """Sum the jobs' parts, add the idle gaps of each phase, and count each phase's jobs by kind.

    A job belongs to the phase in which it was leased; jobs outside every phase are left out.
    """
    totals: defaultdict[str, float] = defaultdict(float)
    per_job: dict[str, list[float]] = {}
    per_phase: list[PhaseJobs] = []
    waits: list[float] = []
    for phase in phases:
        inside = sorted(
            (job for job in jobs if phase.started_at <= job.leased_at <= phase.ended_at),
            key=lambda job: job.leased_at,
        )
        free_from = phase.started_at
        for job in inside:
            for name, seconds in job.parts.items():
                totals[name] += seconds
                per_job.setdefault(name, []).append(seconds)
            totals[IDLE] += max((job.leased_at - free_from).total_seconds(), 0.0)
            free_from = max(free_from, job.finished_at)
            waits.append(job.queue_wait_s)
        totals[IDLE] += max((phase.ended_at - free_from).total_seconds(), 0.0)
        per_phase.append(PhaseJobs(phase, Counter(job.kind for job in inside)))
    return TimeBreakdown(
        total_s=dict(totals),
        median_s={name: statistics.median(values) for name, values in per_job.items()},
        phases=tuple(per_phase),
        wall_s=sum(phase.wall_s for phase in phases),
        queue_wait_median_s=statistics.median(waits) if waits else None,
        queue_wait_max_s=max(waits) if waits else None,
    )


def load_job_timings(*, session: Session) -> list[JobTiming]:
    """Every job that was leased and finished, with its kind and the parts of its span."""
    reruns = set(session.scalars(select(Run.rerun_job_id).where(Run.rerun_job_id.is_not(None))))
    last_run: dict[int, tuple[float | None, dict[str, Any]]] = {}
    rows = session.execute(
        select(Run.job_id, Run.e2e_ms, RunArtifacts.environment)
        .join(RunArtifacts, RunArtifacts.run_id == Run.id)
        .where(Run.job_id.is_not(None))
        .order_by(Run.id)
    )
    for job_id, e2e_ms, environment in rows:
        if job_id is not None:
            last_run[job_id] = (e2e_ms, environment or {})  # a job's newest attempt counts
    timings = []
    for job, comparison in session.execute(
        select(Job, Comparison.kind)
        .outerjoin(Comparison, Comparison.id == Job.comparison_id)
        .order_by(Job.id)
    ):
        if job.leased_at is None or job.finished_at is None:
            continue
        e2e_ms, environment = last_run.get(job.id, (None, {}))
        span_s = (job.finished_at - job.leased_at).total_seconds()
        timings.append(
            JobTiming(
                job_id=job.id,
                kind=job_kind(job.reason, comparison, job.id in reruns),
                queued_at=job.created_at,
                leased_at=job.leased_at,
                finished_at=job.finished_at,
                parts=job_parts(environment, e2e_ms, span_s),
            )
        )
    return timings


def _numbers(value: object) -> dict[str, float]:
    """The numeric entries of a JSON object (nothing when it is not one)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(key): float(number)
        for key, number in value.items()
        if isinstance(number, (int, float)) and not isinstance(number, bool)
    }
