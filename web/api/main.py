"""The /api/v1 router: includes one router per resource and nothing else."""

from __future__ import annotations

from fastapi import APIRouter

from web.api import (
    alerts,
    cases,
    comparisons,
    github,
    hardware,
    jobs,
    nightly,
    results,
    runners,
    runs,
    series,
)

api_router = APIRouter(prefix="/api/v1")
api_router.include_router(cases.router)
api_router.include_router(hardware.router)
api_router.include_router(series.router)
api_router.include_router(runs.router)
api_router.include_router(results.router)
api_router.include_router(runners.router)
api_router.include_router(jobs.router)
api_router.include_router(alerts.router)
api_router.include_router(comparisons.router)
api_router.include_router(github.router)
api_router.include_router(nightly.router)
