"""The pages router: includes one router per page family."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from web.deps import refuse_nul_characters
from web.pages import account, alerts, comparisons, groups, outputs, overview, runs, series
from web.pages.commits import router as commits_router
from web.pages.fleet import router as fleet_router
from web.pages.nightly import router as nightly_router
from web.pages.notifications import router as notifications_router

# A NUL in a path or query is a 422 here too (PostgreSQL cannot compare text with one).
pages_router = APIRouter(include_in_schema=False, dependencies=[Depends(refuse_nul_characters)])
pages_router.include_router(overview.router)
pages_router.include_router(series.router)
pages_router.include_router(runs.router)
pages_router.include_router(outputs.router)
pages_router.include_router(commits_router)
pages_router.include_router(fleet_router)
pages_router.include_router(account.router)
pages_router.include_router(alerts.router)
pages_router.include_router(groups.router)
pages_router.include_router(comparisons.router)
pages_router.include_router(nightly_router)
pages_router.include_router(notifications_router)
