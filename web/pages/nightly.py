"""``/nightly``: the latest runs of every nightly schedule; ``/nights`` and ``/nights/{id}``: the
nights one by one, each page saying what its ``nightly.summary`` notification says."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.scheduling.summary import alert_line, get_night, list_nights, nightly_summary
from web.deps import SessionDep, SettingsDep
from web.pages.templating import templates
from web.schemas.params import NightId

router = APIRouter()


@router.get("/nightly", response_class=HTMLResponse)
def nightly_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Per schedule: the commit measured, jobs queued and failed, alerts created since."""
    return templates.TemplateResponse(
        request,
        "nightly.html",
        {"summaries": nightly_summary(session=session), "title": "Nightly"},
    )


@router.get("/nights", response_class=HTMLResponse)
def nights_page(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """Every night, newest first, each linked to its page."""
    return templates.TemplateResponse(
        request,
        "nights.html",
        {"nights": list_nights(session=session, limit=settings.max_page_size), "title": "Nights"},
    )


@router.get("/nights/{night_id}", response_class=HTMLResponse)
def night_page(request: Request, night_id: NightId, session: SessionDep) -> HTMLResponse:
    """One night: what ran, what changed, what is still open, what got fixed."""
    summary = get_night(session=session, run_id=night_id)
    return templates.TemplateResponse(
        request,
        "night.html",
        {"summary": summary, "alert_line": alert_line, "title": f"Night {summary.view.run.id}"},
    )
