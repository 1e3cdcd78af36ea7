"""Runs: one run's summary, per-step times, stages, environment; its raw log as text."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from tracker.queries import get_run
from web.deps import SessionDep
from web.schemas import RunOut

router = APIRouter(prefix="/runs", tags=["runs"])


@router.get("/{run_id}", response_model=RunOut, responses={404: {"description": "No such run"}})
def read_run(run_id: int, session: SessionDep) -> RunOut:
    """One run with its steps and stages."""
    return RunOut.of(get_run(session=session, run_id=run_id))


@router.get(
    "/{run_id}/log", response_class=PlainTextResponse, responses={404: {"description": "No such run"}}
)
def read_run_log(run_id: int, session: SessionDep) -> PlainTextResponse:
    """The raw log the run was parsed from."""
    run = get_run(session=session, run_id=run_id)
    return PlainTextResponse(run.artifacts.raw_log, headers={"X-Content-Type-Options": "nosniff"})
