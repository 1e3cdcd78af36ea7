"""The job queue: enqueue (admin), list, and the runner side of an attempt (heartbeat, result, release)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason, JobState, enum_values
from tracker.errors import InvalidInput
from tracker.ingest.batch import validate_each
from tracker.ingest.results import IngestLimits
from tracker.queue.jobs import enqueue_job, get_job, heartbeat, list_jobs, release_job
from tracker.queue.runners import acting_runner
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.batches import store_job_results
from tracker.workflows.results import store_job_result
from web.batches import batch_out, job_ids_sent
from web.deps import AdminTokenDep, RunnerTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.followups import FollowUpsDep
from web.schemas import EnqueueIn, EnqueueOut, JobOut
from web.schemas.errors import ADMIN, BODY, NOT_THIS_RUNNER, RUNNER, errors
from web.schemas.params import JobId
from web.schemas.runner_protocol import lease_out, result_created
from wire import (
    MAX_BATCH_ITEMS,
    AttemptIn,
    BatchOut,
    JobResultBatchIn,
    JobResultIn,
    JobResultItemIn,
    LeaseOut,
    ResultCreated,
)

router = APIRouter(prefix="/jobs", tags=["jobs"])
RunnerName = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=128,
        description="the runner holding the lease; optional, the token says who the runner is, and a name "
        "other than the token's runner is refused (403)",
    ),
]


@router.post(
    "",
    response_model=EnqueueOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"description": "The same job was queued before; nothing new"},
        **errors(ADMIN, BODY, 404, 409),
    },
)
def enqueue(
    body: EnqueueIn, response: Response, session: WriteSessionDep, token: AdminTokenDep
) -> EnqueueOut:
    """Queue a case on a candidate (commit plus patches); the same request twice queues one job."""
    case = get_current_case(session=session, slug=body.case)
    kind = get_hardware_kind(session=session, name=body.hardware)
    if case.repository is None:
        raise InvalidInput("case", f"case {case.slug!r} has no repository in its suite")
    commit = upsert_commit(session=session, repository=case.repository, commit=body.commit)
    candidate = ensure_candidate(session=session, base=commit, patches=body.patches)
    outcome = enqueue_job(
        session=session,
        candidate=candidate,
        case=case,
        hardware=kind,
        reason=JobReason(body.reason),
        priority=body.priority,
        purpose=body.purpose,
        requested_by=token.name,
    )
    session.commit()
    if not outcome.created:
        response.status_code = status.HTTP_200_OK
    return EnqueueOut.of(outcome)


@router.get("", response_model=list[JobOut], responses=errors(422))
def list_queue(
    session: SessionDep,
    settings: SettingsDep,
    state: str | None = None,
    hardware: str | None = None,
    limit: Annotated[int, Query(ge=1)] = 200,
) -> list[JobOut]:
    """Jobs, newest first, filtered by state and hardware kind."""
    chosen_state = None
    if state is not None:
        if state not in enum_values(JobState):
            raise InvalidInput("state", f"unknown state {state!r}; valid: {', '.join(enum_values(JobState))}")
        chosen_state = JobState(state)
    kind = get_hardware_kind(session=session, name=hardware) if hardware else None
    jobs = list_jobs(
        session=session, state=chosen_state, hardware=kind, limit=min(limit, settings.max_page_size)
    )
    return [JobOut.of(job) for job in jobs]


@router.post(
    "/results",
    response_model=BatchOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        404,
        notes={
            403: NOT_THIS_RUNNER,
            404: "No such runner (register it first)",
            413: "Request body over the configured size limit (an item's log over its limit is refused alone)",
            422: f"Not a batch: no `results` list, or more than {MAX_BATCH_ITEMS} items (a bad item is "
            "refused alone, in the 200 answer)",
        },
    ),
)
def upload_results(
    body: JobResultBatchIn,
    request: Request,
    session: WriteSessionDep,
    settings: SettingsDep,
    follow_ups: FollowUpsDep,
    token: RunnerTokenDep,
    runner: RunnerName = None,
) -> BatchOut:
    """Store several attempts' results of the acting runner; 200 with one line per item, in order.

    Each item is ``{"job_id": ID, "result": <what POST /jobs/{id}/result takes>}`` and is checked and
    stored as that endpoint does it: the attempt must still hold its lease for this runner (else the
    item is ``refused`` with ``error_status`` 409 and the reason), a repeat is a ``duplicate`` with the
    stored run, and a new run finishes its job and moves its comparison, bisection or series on.
    A refused item never stops the others; all are committed together.
    """
    owner = acting_runner(session=session, token=token, name=runner)
    limits = IngestLimits.from_settings(settings)
    uploads = validate_each(JobResultItemIn, body.results)
    telling = settings.culprit_telling()
    items = store_job_results(session=session, runner=owner, uploads=uploads, limits=limits, telling=telling)
    session.commit()
    follow_ups.start_bisections()
    follow_ups.summarize_evidence()  # the evidence runs among them: their traces, read after the answer
    return batch_out(request, items, job_ids_sent(body.results))


@router.get("/{job_id}", response_model=JobOut, responses=errors(404, 422, notes={404: "No such job"}))
def read_job(job_id: JobId, session: SessionDep) -> JobOut:
    """One job with its attempt history."""
    return JobOut.of(get_job(session=session, job_id=job_id))


@router.post(
    "/{job_id}/heartbeat",
    response_model=LeaseOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        404,
        409,
        notes={403: NOT_THIS_RUNNER, 404: "No such job or runner", 409: "The attempt lost its lease"},
    ),
)
def beat(
    job_id: JobId,
    body: AttemptIn,
    session: WriteSessionDep,
    settings: SettingsDep,
    token: RunnerTokenDep,
    runner: RunnerName = None,
) -> LeaseOut:
    """Extend the lease of a running attempt."""
    owner = acting_runner(session=session, token=token, name=runner)
    job = heartbeat(
        session=session,
        runner=owner,
        job_id=job_id,
        attempt=body.attempt,
        lease=dt.timedelta(seconds=settings.lease_seconds),
    )
    session.commit()
    return lease_out(job)


@router.post(
    "/{job_id}/result",
    response_model=ResultCreated,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"description": "This attempt's result was stored before; nothing new"},
        **errors(
            RUNNER,
            BODY,
            403,
            404,
            409,
            notes={
                403: NOT_THIS_RUNNER,
                404: "No such job or runner",
                409: "The attempt's lease expired or the job moved on; nothing stored",
            },
        ),
    },
)
def upload_result(
    job_id: JobId,
    body: JobResultIn,
    response: Response,
    session: WriteSessionDep,
    settings: SettingsDep,
    follow_ups: FollowUpsDep,
    token: RunnerTokenDep,
    runner: RunnerName = None,
) -> ResultCreated:
    """Store the run of one attempt (a failure too: its reason and log are kept)."""
    owner = acting_runner(session=session, token=token, name=runner)
    limits = IngestLimits.from_settings(settings)
    telling = settings.culprit_telling()
    outcome = store_job_result(
        session=session, runner=owner, job_id=job_id, result=body, limits=limits, telling=telling
    )
    session.commit()
    follow_ups.start_bisections()
    follow_ups.summarize_evidence()  # an evidence run's trace is read after the answer, never in it
    if not outcome.created:
        response.status_code = status.HTTP_200_OK
    return result_created(outcome)


@router.post(
    "/{job_id}/release",
    response_model=JobOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        404,
        409,
        notes={403: NOT_THIS_RUNNER, 404: "No such job or runner", 409: "Not this runner's lease"},
    ),
)
def release(
    job_id: JobId,
    body: AttemptIn,
    session: WriteSessionDep,
    token: RunnerTokenDep,
    runner: RunnerName = None,
) -> JobOut:
    """Hand a job back to the queue (runner shutting down); it does not use up an attempt."""
    owner = acting_runner(session=session, token=token, name=runner)
    job = release_job(session=session, runner=owner, job_id=job_id, attempt=body.attempt, reason=body.reason)
    session.commit()
    return JobOut.of(job)


@router.post(
    "/{job_id}/cancel",
    response_model=JobOut,
    responses=errors(ADMIN, 404, 409, 422, notes={404: "No such job", 409: "Already finished"}),
)
def cancel(
    job_id: JobId,
    session: WriteSessionDep,
    token: AdminTokenDep,
    follow_ups: FollowUpsDep,
    settings: SettingsDep,
) -> JobOut:
    """Cancel a queued or running job."""
    job = workflow_jobs.cancel(
        session=session,
        job_id=job_id,
        reason=f"cancelled by {token.name}",
        telling=settings.culprit_telling(),
    )
    session.commit()
    follow_ups.start_bisections()
    return JobOut.of(job)
