"""Runners: register, claim work, and the registry."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Response, status

from tracker.catalog.cases import carried_patches_for, get_hardware_kind
from tracker.comparisons.creation import job_requests
from tracker.queue.runners import acting_runner, list_runners, register_runner
from tracker.workflows import jobs as workflow_jobs
from web.deps import RunnerTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.followups import FollowUpsDep
from web.schemas import job_spec_out, runner_out
from web.schemas.errors import BODY, NOT_THIS_RUNNER, RUNNER, errors
from wire import JobSpecOut, RunnerIn, RunnerOut

router = APIRouter(prefix="/runners", tags=["runners"])


@router.post(
    "",
    response_model=RunnerOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        409,
        notes={
            403: "An admin token, or the name is bound to another runner token; nothing changed",
            409: "This token already acts as another runner (one token per runner)",
        },
    ),
)
def register(
    body: RunnerIn, session: WriteSessionDep, settings: SettingsDep, token: RunnerTokenDep
) -> RunnerOut:
    """Register a runner (or update what it advertises): hardware kind, GPU count, labels, version.

    The first registration binds the runner token to the name; only that token acts as it after.
    """
    kind = get_hardware_kind(session=session, name=body.hardware)
    runner = register_runner(
        session=session,
        name=body.name,
        hardware=kind,
        gpu_count=body.gpu_count,
        labels=body.labels,
        version=body.version,
        host=body.host,
        token=token,
    )
    session.commit()
    offline_after = dt.timedelta(seconds=settings.runner_offline_after_s)
    status_ = next(
        s for s in list_runners(session=session, offline_after=offline_after) if s.runner.id == runner.id
    )
    return runner_out(status_)


@router.post(
    "/{name}/claim",
    response_model=JobSpecOut,
    responses={
        204: {"description": "No work for this runner now"},
        **errors(RUNNER, 403, 404, 422, notes={403: NOT_THIS_RUNNER, 404: "Runner not registered"}),
    },
)
def claim(
    name: str,
    session: WriteSessionDep,
    settings: SettingsDep,
    token: RunnerTokenDep,
    follow_ups: FollowUpsDep,
) -> JobSpecOut | Response:
    """Lease the next job this runner's hardware kind and GPU count can run (``name``: the token's runner)."""
    runner = acting_runner(session=session, token=token, name=name)
    job = workflow_jobs.claim(
        session=session, runner=runner, lease=dt.timedelta(seconds=settings.lease_seconds)
    )
    follow_ups.start_bisections()  # a lease that ran out may have ended a bisection's round
    if job is None:
        session.commit()
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    carried = carried_patches_for(
        session=session, repository_id=job.candidate.repository_id, hardware_kind_id=job.hardware_kind_id
    )
    requests = job_requests(session=session, job=job)
    spec = job_spec_out(job, carried, settings.lease_seconds, requests=requests)
    session.commit()
    return spec


@router.get("", response_model=list[RunnerOut])
def list_all(session: SessionDep, settings: SettingsDep) -> list[RunnerOut]:
    """The runner registry: online first, with the job each one holds."""
    offline_after = dt.timedelta(seconds=settings.runner_offline_after_s)
    return [runner_out(status_) for status_ in list_runners(session=session, offline_after=offline_after)]
