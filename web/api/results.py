"""Results made outside a job (imports)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from tracker.ingest import IngestLimits, ingest_result
from tracker.schemas import ResultIn
from web.deps import HistoryDep, RunnerTokenDep, SettingsDep, WriteSessionDep
from web.schemas import ResultCreated

router = APIRouter(prefix="/results", tags=["results"])


@router.post(
    "",
    response_model=ResultCreated,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"description": "The same result was stored before (same idempotency key); nothing new"},
        401: {"description": "Missing, unknown or revoked token"},
        409: {"description": "The idempotency key was used for a different result"},
        413: {"description": "Body or log over the size limit"},
        422: {"description": "Invalid field (the message names it), unknown case or hardware"},
    },
)
def post_result(
    result: ResultIn,
    response: Response,
    session: WriteSessionDep,
    settings: SettingsDep,
    history: HistoryDep,
    _token: RunnerTokenDep,
) -> ResultCreated:
    """Store one result; posting it again with the same idempotency key stores nothing new."""
    limits = IngestLimits(max_log_bytes=settings.max_log_bytes, max_steps_per_run=settings.max_steps_per_run)
    outcome = ingest_result(session=session, result=result, limits=limits, history=history)
    session.commit()
    if not outcome.created:
        response.status_code = status.HTTP_200_OK
    run = outcome.run
    return ResultCreated(
        run_id=run.id,
        created=outcome.created,
        status=str(run.status),
        denoise_step_ms=run.denoise_step_ms,
        url=f"/runs/{run.id}",
    )
