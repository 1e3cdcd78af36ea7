"""Drive a comparison's queue as one runner would, a minute between claims, with an order effect
planted: a run that starts after the counted run of the other arm of its round is the round's
second run, and ``measure`` may make it faster or slower. Used by the order tests of the tracker,
the API and the pages."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from tests.factories import job_result
from tracker.catalog.cases import get_hardware_kind
from tracker.comparisons.creation import repository_of_cases, resolve_candidate
from tracker.enums import Arm, JobReason
from tracker.ingest.results import IngestLimits
from tracker.models import Candidate, Job, Runner
from tracker.queue.runners import register_runner
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result

CASE = "qwen-image-t2i-1024"
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(minutes=1)
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
# A GPU that throttled during the run: hygiene flags it, and its job is queued once more.
THROTTLED: dict[str, Any] = {
    "conditions": {
        "gpu": {
            "before": [{"index": 0, "sm_clock_mhz": 1980, "throttle_reasons": ["sw_thermal_slowdown"]}],
            "after": [{"index": 0, "sm_clock_mhz": 1410, "throttle_reasons": ["sw_thermal_slowdown"]}],
        }
    }
}

# What a job measures (ms per step), given whether it runs second in its round.
Measure = Callable[[Job, bool], float]
# Whether this try of a job is measured on a throttled GPU (flagged, then re-run).
Flag = Callable[[Job], bool]


def candidate(session: Session, sha: str, patches: list[str] | None = None) -> Candidate:
    """The candidate ``sha + patches`` of the case's repository."""
    repository = repository_of_cases(session=session, cases=[CASE])
    return resolve_candidate(session=session, repository=repository, sha=sha, patches=patches or [])


def runner(session: Session, now: dt.datetime = T0) -> Runner:
    """The one H200 runner (registered once: registering again returns it)."""
    return register_runner(
        session=session,
        name="h200-a",
        hardware=get_hardware_kind(session=session, name="H200"),
        gpu_count=8,
        labels={},
        version="t",
        host="h",
        token=None,
        now=now,
    )


def wobble(job: Job, size_pct: float = 0.2) -> float:
    """A deterministic, small run-to-run wobble per round and arm (a factor near 1)."""
    assert job.comparison_round is not None
    phase = job.comparison_round * (1.0 if job.arm is Arm.BASE else 2.3)
    return 1.0 + size_pct / 100.0 * math.sin(phase)


def second_faster(effect_pct: float, level_ms: float = 30.0) -> Measure:
    """Both arms at ``level_ms``; the second run of a round ``effect_pct`` off (negative: faster)."""

    def measure(job: Job, second: bool) -> float:
        return level_ms * (1.0 + effect_pct / 100.0 if second else 1.0) * wobble(job)

    return measure


def run_queue(
    session: Session,
    measure: Measure,
    *,
    flag: Flag = lambda job: False,
    start: dt.datetime = T0,
    limit: int = 200,
) -> list[tuple[Job, bool]]:
    """Claim and run every queued job in queue order, ``STEP`` apart; each job with whether it ran
    second in its round (after a counted, unflagged run of the other arm)."""
    agent = runner(session, start)
    counted: set[tuple[int | None, int, int, int | None, Arm | None]] = set()
    ran: list[tuple[Job, bool]] = []
    now = start
    for _ in range(limit):
        now += STEP
        job = workflow_jobs.claim(session=session, runner=agent, now=now)
        if job is None:
            return ran
        if job.reason is JobReason.EVIDENCE:  # a regression's profiled re-runs: no round
            result = job_result(job.attempts, step_times_ms=[30.0] * 3)
            store_job_result(
                session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=now
            )
            continue
        other = Arm.HEAD if job.arm is Arm.BASE else Arm.BASE
        round_key = (job.comparison_id, job.case_id, job.hardware_kind_id, job.comparison_round)
        second = (*round_key, other) in counted
        flagged = flag(job)
        result = job_result(
            job.attempts,
            step_times_ms=[measure(job, second)] * 3,
            **({"environment": THROTTLED} if flagged else {}),
        )
        store_job_result(session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=now)
        if not flagged:
            counted.add((*round_key, job.arm))
        ran.append((job, second))
    raise AssertionError("the queue never drained")
