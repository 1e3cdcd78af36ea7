"""The runner protocol's answers, built from what the tracker stored.

Their shapes live in :mod:`wire` (shared with the runners, and a leaf that never imports the
tracker), so they cannot carry a constructor from tracker rows as :mod:`web.schemas`' own models do
(``JobOut.of(job)``); each is built here by one function named after the shape it returns.
"""

from __future__ import annotations

from tracker.ingest.results import IngestOutcome
from tracker.models import CarriedPatch, Job
from tracker.queue.runners import RunnerStatus
from wire import (
    ClaimedCandidate,
    ClaimedCarried,
    ClaimedCase,
    ClaimedRepository,
    JobSpecOut,
    LeaseOut,
    ResultCreated,
    RunnerOut,
)


def runner_out(status: RunnerStatus) -> RunnerOut:
    """A registered runner, from the tracker's runner status."""
    runner = status.runner
    return RunnerOut(
        name=runner.name,
        hardware=runner.hardware_kind.name,
        gpu_count=runner.gpu_count,
        labels=dict(runner.labels),
        version=runner.version,
        host=runner.host,
        last_heartbeat_at=runner.last_heartbeat_at,
        online=status.online,
        current_job_id=status.current_job_id,
    )


def job_spec_out(
    job: Job, carried: list[CarriedPatch], lease_seconds: int, *, requests: int | None = None
) -> JobSpecOut:
    """The claim answer for a freshly leased job; ``requests`` overrides the case's (a comparison's)."""
    case = job.case
    repository = job.candidate.base_commit.repository
    assert job.lease_expires_at is not None  # a leased job always has an expiry
    return JobSpecOut(
        job_id=job.id,
        attempt=job.attempts,
        reason=job.reason.value,
        hardware=job.hardware_kind.name,
        lease_seconds=lease_seconds,
        lease_expires_at=job.lease_expires_at,
        repository=ClaimedRepository(
            name=repository.name, url=repository.url, default_branch=repository.default_branch
        ),
        candidate=ClaimedCandidate(
            base_sha=job.candidate.base_commit.sha,
            patches=[patch.ref for patch in job.candidate.patches],
            carried=[ClaimedCarried(ref=patch.ref, reason=patch.reason) for patch in carried],
        ),
        case=ClaimedCase(
            slug=case.slug,
            version=case.version,
            model=case.model,
            task=case.task,
            workload=case.workload.value,
            mode=case.mode.value,
            num_gpus=case.num_gpus,
            requests=case.requests if requests is None else requests,
            timeout_s=case.timeout_s,
            params=dict(case.params),
            flags=dict(case.flags),
        ),
    )


def lease_out(job: Job) -> LeaseOut:
    """The heartbeat answer: the attempt's lease, extended."""
    assert job.lease_expires_at is not None  # a job whose lease was just extended has an expiry
    return LeaseOut(job_id=job.id, attempt=job.attempts, lease_expires_at=job.lease_expires_at)


def result_created(outcome: IngestOutcome) -> ResultCreated:
    """The answer to an upload (an import or a job's attempt): the run stored, or stored before."""
    run = outcome.run
    return ResultCreated(
        run_id=run.id,
        created=outcome.created,
        status=run.status.value,
        denoise_step_ms=run.denoise_step_ms,
        url=f"/runs/{run.id}",
        warnings=list(outcome.warnings),
    )
