"""``/nightly``: the latest runs of every nightly schedule."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.scheduling.summary import nightly_summary
from web.deps import SessionDep
from web.pages.templating import templates

router = APIRouter()


@router.get("/nightly", response_class=HTMLResponse)
def nightly_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Per schedule: the commit measured, jobs queued and failed, alerts created since."""
    return templates.TemplateResponse(
        request,
        "nightly.html",
        {"summaries": nightly_summary(session=session), "title": "Nightly"},
    )
