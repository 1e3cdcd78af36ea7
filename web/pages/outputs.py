"""``/runs/{run_id}/output/{position}.png``: a run's output reference, the thumbnail pages show."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from tracker.views.output_frames import output_frame_png
from web.deps import SessionDep
from web.schemas.params import RunId
from wire.outputs import MAX_REFERENCE_FRAMES

router = APIRouter()
Position = Annotated[int, Path(ge=0, lt=MAX_REFERENCE_FRAMES, description="the reference's place, 0 first")]


@router.get("/runs/{run_id}/output/{position}.png")
def output_png(run_id: RunId, position: Position, session: SessionDep) -> Response:
    """One reference PNG of the run's seeded output (lossless; stored once, never changes)."""
    return Response(
        content=output_frame_png(session=session, run_id=run_id, position=position),
        media_type="image/png",
        headers={"Cache-Control": "public, max-age=86400, immutable", "X-Content-Type-Options": "nosniff"},
    )
