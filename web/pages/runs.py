"""``/runs/{id}``: one run's numbers, stages, per-step times and log."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.queries import get_run
from web.deps import SessionDep
from web.pages.templating import templates

router = APIRouter()


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: int, session: SessionDep) -> HTMLResponse:
    """Run detail."""
    run = get_run(session=session, run_id=run_id)
    steps = [float(value) for value in run.artifacts.step_times_ms]
    slowest = max(steps) if steps else None
    return templates.TemplateResponse(
        request,
        "run.html",
        {
            "run": run,
            "steps": steps,
            "slowest": slowest,
            "artifacts": run.artifacts,
            "title": f"Run {run.id}",
        },
    )
