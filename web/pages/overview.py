"""``/``: every case × hardware kind with its latest value of record."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.queries import overview
from web.deps import SessionDep
from web.pages.templating import templates

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def overview_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Overview grid."""
    rows = overview(session=session)
    measured = sum(1 for row in rows if row.run_count)
    return templates.TemplateResponse(
        request, "overview.html", {"rows": rows, "measured": measured, "title": "Overview"}
    )
