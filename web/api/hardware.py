"""Hardware kinds."""

from __future__ import annotations

from fastapi import APIRouter

from tracker.catalog.cases import list_hardware_kinds
from web.deps import SessionDep
from web.schemas import HardwareOut

router = APIRouter(prefix="/hardware", tags=["hardware"])


@router.get("", response_model=list[HardwareOut])
def list_hardware(session: SessionDep) -> list[HardwareOut]:
    """Every hardware kind perftrack knows."""
    return [HardwareOut.of(kind) for kind in list_hardware_kinds(session=session)]
