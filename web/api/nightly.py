"""Nightly runs: per schedule, what ran, what failed and what changed since."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tracker.scheduling.summary import nightly_summary
from web.deps import SessionDep
from web.schemas.errors import errors
from web.schemas.nightly import NightlyScheduleOut

router = APIRouter(prefix="/nightly", tags=["nightly"])


@router.get("", response_model=list[NightlyScheduleOut], responses=errors(422))
def read_nightly(
    session: SessionDep, runs: Annotated[int, Query(ge=1, le=100, description="runs per schedule")] = 5
) -> list[NightlyScheduleOut]:
    """The latest runs of every schedule: what ran, what failed, which alerts followed."""
    return [
        NightlyScheduleOut.of(summary) for summary in nightly_summary(session=session, runs_per_schedule=runs)
    ]
