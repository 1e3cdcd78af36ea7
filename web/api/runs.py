"""Runs: one run's summary, per-step times, stages, environment, output; its raw log as text, its
output's reference PNGs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import PlainTextResponse, Response

from tracker.views.output_frames import output_frame_png
from tracker.views.runs import get_run, run_output
from web.deps import SessionDep
from web.schemas import RunOut
from web.schemas.errors import errors
from web.schemas.params import RunId
from wire.outputs import MAX_REFERENCE_FRAMES

router = APIRouter(prefix="/runs", tags=["runs"])
Position = Annotated[int, Path(ge=0, lt=MAX_REFERENCE_FRAMES, description="the reference's place, 0 first")]


@router.get("/{run_id}", response_model=RunOut, responses=errors(404, 422, notes={404: "No such run"}))
def read_run(run_id: RunId, session: SessionDep) -> RunOut:
    """One run with its steps, stages and saved output."""
    return RunOut.of(get_run(session=session, run_id=run_id), run_output(session=session, run_id=run_id))


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


@router.get(
    "/{run_id}/output/{position}.png",
    responses={
        200: {"description": "The reference, a lossless PNG", "content": {"image/png": {}}},
        **errors(404, 422, notes={404: "No such run, or it saved no output with that reference"}),
    },
)
def read_run_output_png(run_id: RunId, position: Position, session: SessionDep) -> Response:
    """One reference PNG of the run's seeded output (position 0 for an image)."""
    return Response(
        content=output_frame_png(session=session, run_id=run_id, position=position),
        media_type="image/png",
        headers={"Cache-Control": "public, max-age=86400, immutable", "X-Content-Type-Options": "nosniff"},
    )
