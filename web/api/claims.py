"""A runner's claim: lease the next job now, or wait (long-poll) until one of its kind is queued."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool

from tracker.catalog.cases import carried_patches_for
from tracker.comparisons.creation import job_requests
from tracker.queue.claims import claimable
from tracker.queue.runners import claiming_runner
from tracker.workflows import jobs as workflow_jobs
from web.deps import RunnerSecretDep, get_state
from web.schemas.errors import NOT_THIS_RUNNER, RUNNER, errors
from web.schemas.runner_protocol import job_spec_out
from web.state import AppState
from wire import JobSpecOut

router = APIRouter(prefix="/runners", tags=["runners"])
MAX_WAIT_S = 30.0  # a waiting claim holds a request open; a server shutting down answers it at once
StateDep = Annotated[AppState, Depends(get_state)]
Wait = Annotated[
    float,
    Query(
        ge=0,
        le=MAX_WAIT_S,
        description="seconds to wait for a job when none is queued now (long-poll); answered as soon "
        "as one of this runner's kind is queued, else 204 when the time is up. 0: answer at once",
    ),
]


@dataclass(frozen=True)
class _Try:
    spec: JobSpecOut | None
    hardware_kind_id: int
    gpu_count: int


@router.post(
    "/{name}/claim",
    response_model=JobSpecOut,
    responses={
        204: {"description": "No work for this runner now (or none came within `wait` seconds)"},
        **errors(RUNNER, 403, 404, 422, notes={403: NOT_THIS_RUNNER, 404: "Runner not registered"}),
    },
)
async def claim(
    name: str, request: Request, state: StateDep, secret: RunnerSecretDep, wait: Wait = 0.0
) -> JobSpecOut | Response:
    """Lease the next job this runner's hardware kind and GPU count can run (``name``: the token's runner).

    With ``wait``, a claim that finds nothing waits for a job instead of answering 204 at once: an
    idle runner costs one request per ``wait`` seconds, and gets a job as soon as it is queued.
    A waiting claim holds no database connection. Each try checks the token in its own
    transaction, with the runner it is bound to (one query): a revoked token stops claiming at once.
    """
    deadline = time.monotonic() + wait
    first = await run_in_threadpool(_claim_once, state, secret, name)
    if first.spec is not None:
        return first.spec
    waiters = state.waiters
    waiter = waiters.register(first.hardware_kind_id) if wait > 0 else None
    try:
        while waiter is not None and not waiters.closed:
            # Registered before looking: a job queued from now on wakes this claim.
            if await run_in_threadpool(_anything_queued, state, first):
                if await request.is_disconnected():
                    break
                attempt = await run_in_threadpool(_claim_once, state, secret, name)
                if attempt.spec is not None:
                    return attempt.spec
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await waiters.wait(waiter, min(remaining, waiters.recheck_s))
    finally:
        if waiter is not None:
            waiters.unregister(waiter)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _claim_once(state: AppState, secret: str, name: str) -> _Try:
    """One claim in a write transaction of its own: authentication, the lease and what the answer
    shows (six round trips to the database): the job spec, or ``None``."""
    settings = state.settings
    with state.sessions() as session:
        runner = claiming_runner(session=session, secret=secret, name=name)
        job = workflow_jobs.claim(
            session=session, runner=runner, lease=dt.timedelta(seconds=settings.lease_seconds)
        )
        spec = None
        if job is not None:
            carried = carried_patches_for(
                session=session,
                repository_id=job.candidate.repository_id,
                hardware_kind_id=job.hardware_kind_id,
            )
            requests = job_requests(session=session, job=job)
            spec = job_spec_out(job, carried, settings.lease_seconds, requests=requests)
        session.commit()
        return _Try(spec=spec, hardware_kind_id=runner.hardware_kind_id, gpu_count=runner.gpu_count)


def _anything_queued(state: AppState, runner: _Try) -> bool:
    with state.read_sessions() as session:
        return claimable(
            session=session, hardware_kind_id=runner.hardware_kind_id, gpu_count=runner.gpu_count
        )
