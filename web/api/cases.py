"""Benchmark cases (current versions)."""

from __future__ import annotations

from fastapi import APIRouter

from tracker.catalog.cases import get_current_case, list_current_cases
from tracker.errors import InvalidInput, NotFound
from web.deps import SessionDep
from web.schemas import CaseOut
from web.schemas.errors import errors

router = APIRouter(prefix="/cases", tags=["cases"])


@router.get("", response_model=list[CaseOut])
def list_cases(session: SessionDep) -> list[CaseOut]:
    """Every current case with its parameters, flags, hardware, thresholds and confirmation caps."""
    return [CaseOut.of(case) for case in list_current_cases(session=session)]


@router.get("/{slug}", response_model=CaseOut, responses=errors(404, 422, notes={404: "No such case"}))
def get_case(slug: str, session: SessionDep) -> CaseOut:
    """One case by slug."""
    try:
        return CaseOut.of(get_current_case(session=session, slug=slug))
    except InvalidInput as error:
        raise NotFound(error.message) from None
