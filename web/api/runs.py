"""Runs: one run's summary, per-step times, stages, environment; its raw log as text."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from tracker.views.runs import get_run
from web.deps import SessionDep
from web.schemas import RunOut
from web.schemas.errors import errors
from web.schemas.params import RunId

router = APIRouter(prefix="/runs", tags=["runs"])


@router.get("/{run_id}", response_model=RunOut, responses=errors(404, 422, notes={404: "No such run"}))
def read_run(run_id: RunId, session: SessionDep) -> RunOut:
    """One run with its steps and stages."""
    return RunOut.of(get_run(session=session, run_id=run_id))


@router.get(
    "/{run_id}/log",
    # Errors are JSON like everywhere else; only the log itself is text.
    responses={
        200: {"description": "The raw log", "content": {"text/plain": {"schema": {"type": "string"}}}},
        **errors(404, 422, notes={404: "No such run"}),
    },
)
def read_run_log(run_id: RunId, session: SessionDep) -> PlainTextResponse:
    """The raw log the run was parsed from."""
    run = get_run(session=session, run_id=run_id)
    return PlainTextResponse(run.artifacts.raw_log, headers={"X-Content-Type-Options": "nosniff"})
