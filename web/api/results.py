"""Results made outside a job (imports)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from tracker.ingest.results import IngestLimits
from tracker.queue.runners import check_may_import
from tracker.workflows.results import store_result
from web.deps import RunnerTokenDep, SettingsDep, WriteSessionDep
from web.followups import FollowUpsDep
from web.schemas.errors import BODY, RUNNER, errors
from wire import ResultCreated, ResultIn

router = APIRouter(prefix="/results", tags=["results"])


@router.post(
    "",
    response_model=ResultCreated,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"description": "The same result was stored before (same idempotency key); nothing new"},
        **errors(
            RUNNER,
            BODY,
            403,
            409,
            notes={
                403: "The token is bound to a runner: it uploads only that runner's jobs' results",
                409: "The idempotency key was used for a different result",
                422: "Invalid field (the message names it), unknown case or hardware",
            },
        ),
    },
)
def post_result(
    result: ResultIn,
    response: Response,
    session: WriteSessionDep,
    settings: SettingsDep,
    follow_ups: FollowUpsDep,
    token: RunnerTokenDep,
) -> ResultCreated:
    """Store one result; posting it again with the same idempotency key stores nothing new.

    A token bound to a runner may not import (403): it uploads only its own jobs' results.
    """
    check_may_import(session=session, token=token)
    limits = IngestLimits.from_settings(settings)
    outcome = store_result(session=session, result=result, limits=limits)
    session.commit()
    follow_ups.start_bisections()
    if not outcome.created:
        response.status_code = status.HTTP_200_OK
    run = outcome.run
    return ResultCreated(
        run_id=run.id,
        created=outcome.created,
        status=str(run.status),
        denoise_step_ms=run.denoise_step_ms,
        url=f"/runs/{run.id}",
        warnings=list(outcome.warnings),
    )
