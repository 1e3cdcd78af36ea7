"""The /api/v1 router: includes one router per resource, and refuses NUL characters for all of them."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from web.api import (
    alerts,
    cases,
    claims,
    comparisons,
    github,
    groups,
    hardware,
    jobs,
    nightly,
    notifications,
    results,
    runners,
    runs,
    series,
)
from web.deps import refuse_nul_characters

api_router = APIRouter(prefix="/api/v1", dependencies=[Depends(refuse_nul_characters)])
api_router.include_router(cases.router)
api_router.include_router(hardware.router)
api_router.include_router(series.router)
api_router.include_router(runs.router)
api_router.include_router(results.router)
api_router.include_router(runners.router)
api_router.include_router(claims.router)
api_router.include_router(jobs.router)
api_router.include_router(alerts.router)
api_router.include_router(groups.router)
api_router.include_router(comparisons.router)
api_router.include_router(github.router)
api_router.include_router(nightly.router)
api_router.include_router(nightly.nights_router)
api_router.include_router(notifications.router)
