"""The pages router: includes one router per page family."""

from __future__ import annotations

from fastapi import APIRouter

from web.pages import overview, runs, series

pages_router = APIRouter(include_in_schema=False)
pages_router.include_router(overview.router)
pages_router.include_router(series.router)
pages_router.include_router(runs.router)
