"""Results made outside a job (imports)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from tracker.ingest.batch import validate_each
from tracker.ingest.results import IngestLimits
from tracker.queue.runners import check_may_import
from tracker.workflows.batches import store_results
from tracker.workflows.results import store_result
from web.batches import batch_out
from web.deps import RunnerTokenDep, SettingsDep, WriteSessionDep
from web.followups import FollowUpsDep
from web.schemas.errors import BODY, RUNNER, errors
from web.schemas.runner_protocol import result_created
from wire import MAX_BATCH_ITEMS, BatchOut, ResultBatchIn, ResultCreated, ResultIn

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
    outcome = store_result(session=session, result=result, limits=limits, telling=settings.culprit_telling())
    session.commit()
    follow_ups.start_bisections()
    if not outcome.created:
        response.status_code = status.HTTP_200_OK
    return result_created(outcome)


@router.post(
    "/batch",
    response_model=BatchOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        notes={
            403: "The token is bound to a runner: it uploads only that runner's jobs' results",
            413: "Request body over the configured size limit (an item's log over its limit is refused alone)",
            422: f"Not a batch: no `results` list, or more than {MAX_BATCH_ITEMS} items (a bad item is "
            "refused alone, in the 200 answer)",
        },
    ),
)
def post_results_batch(
    body: ResultBatchIn,
    request: Request,
    session: WriteSessionDep,
    settings: SettingsDep,
    token: RunnerTokenDep,
) -> BatchOut:
    """Store many imported results in one request; 200 with one line per item, in the order sent.

    Each item is what ``POST /api/v1/results`` takes, checked as it checks it (fields, size limits,
    unknown case or hardware, an idempotency key used for other content), and stored once by its
    key (or its content's digest): ``stored``, ``duplicate`` (posted before, nothing new) or
    ``refused`` with the reason naming the field and ``error_status``, the status the single
    endpoint would answer. One bad item never loses the others; all are committed together.

    Detection does not run per item: each series the batch's runs of plain commits feed is marked
    once, and the scheduler's pending pass (``pending-detection``, every 5 s) evaluates it, so the
    alerts a batch opens appear after that pass, not in this answer.
    A token bound to a runner may not import (403).
    """
    check_may_import(session=session, token=token)
    limits = IngestLimits.from_settings(settings)
    items = store_results(session=session, results=validate_each(ResultIn, body.results), limits=limits)
    session.commit()
    return batch_out(request, items)
