"""Nightly runs: per schedule, what ran, what failed and what changed since; the nights one by one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tracker.scheduling.summary import get_night, list_nights, nightly_summary
from web.deps import SessionDep, SettingsDep
from web.schemas.errors import errors
from web.schemas.nightly import NightDetailOut, NightlyScheduleOut, NightOut
from web.schemas.params import NightId

router = APIRouter(prefix="/nightly", tags=["nightly"])
nights_router = APIRouter(prefix="/nights", tags=["nightly"])


@router.get("", response_model=list[NightlyScheduleOut], responses=errors(422))
def read_nightly(
    session: SessionDep, runs: Annotated[int, Query(ge=1, le=100, description="runs per schedule")] = 5
) -> list[NightlyScheduleOut]:
    """The latest runs of every schedule: what ran, what failed, which alerts followed."""
    return [
        NightlyScheduleOut.of(summary) for summary in nightly_summary(session=session, runs_per_schedule=runs)
    ]


@nights_router.get("", response_model=list[NightOut], responses=errors(422))
def read_nights(
    session: SessionDep, settings: SettingsDep, limit: Annotated[int, Query(ge=1)] = 100
) -> list[NightOut]:
    """Every schedule's nights, newest first, each with the link to its page."""
    return [
        NightOut.of(run) for run in list_nights(session=session, limit=min(limit, settings.max_page_size))
    ]


@nights_router.get(
    "/{night_id}", response_model=NightDetailOut, responses=errors(404, 422, notes={404: "No such night"})
)
def read_night(night_id: NightId, session: SessionDep) -> NightDetailOut:
    """One night: what ran, what changed, what is still open, what got fixed (what its
    nightly.summary notification says)."""
    return NightDetailOut.of(get_night(session=session, run_id=night_id))
