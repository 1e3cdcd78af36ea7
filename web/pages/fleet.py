"""``/runners`` and ``/jobs``: the fleet's health and the queue, filters in the URL."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from tracker.catalog.cases import get_hardware_kind
from tracker.enums import FINISHED_JOB_STATES, JobState
from tracker.errors import InvalidInput
from tracker.models import HardwareKind
from tracker.observability.metrics import queue_depth
from tracker.queue.jobs import get_job
from tracker.views.fleet import JobRow, hardware_names, job_rows, runner_rows
from web.deps import SessionDep, SettingsDep
from web.pages.templating import templates
from web.schemas.params import MAX_ID

router = APIRouter()


def format_age(age: dt.timedelta | None) -> str:
    """``45 s ago``, ``12 min ago``, ``3 h ago``, ``2 d ago``."""
    if age is None:
        return "never"
    seconds = max(0, int(age.total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


templates.env.filters["age"] = format_age


@router.get("/runners", response_class=HTMLResponse)
def runners_page(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """Runners online and offline, their hardware, current job and recent failures."""
    offline_after = dt.timedelta(seconds=settings.runner_offline_after_s)
    rows = runner_rows(session=session, offline_after=offline_after)
    return templates.TemplateResponse(
        request,
        "runners.html",
        {
            "rows": rows,
            "online": sum(1 for row in rows if row.status.online),
            "offline_after": format_age(offline_after).removesuffix(" ago"),
            "title": "Runners",
        },
    )


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    session: SessionDep,
    state: Annotated[str, Query(max_length=16)] = "",
    hardware: Annotated[str, Query(max_length=64)] = "",
    job_id: Annotated[int | None, Query(alias="id", ge=1, le=MAX_ID)] = None,
) -> HTMLResponse:
    """Queue depth by hardware and reason; queued, leased and finished jobs (or one job by ``id``)."""
    kind: HardwareKind | None = get_hardware_kind(session=session, name=hardware) if hardware else None
    if state and state not in {member.value for member in JobState}:
        known = ", ".join(member.value for member in JobState)
        raise InvalidInput("state", f"unknown job state {state!r}; known: {known}")
    sections: list[tuple[str, str, list[JobRow]]] = []
    if job_id is not None:
        job = get_job(session=session, job_id=job_id)
        sections.append(("job", f"Job {job_id}", job_rows(session=session, states=[job.state], ids=[job_id])))
    elif state:
        chosen = JobState(state)
        sections.append(
            (
                chosen.value,
                chosen.value.capitalize(),
                (job_rows(session=session, states=[chosen], hardware=kind)),
            )
        )
    else:
        sections += [
            ("queued", "Queued", (job_rows(session=session, states=[JobState.QUEUED], hardware=kind))),
            ("leased", "Leased", (job_rows(session=session, states=[JobState.LEASED], hardware=kind))),
            (
                "finished",
                "Recently finished",
                (job_rows(session=session, states=FINISHED_JOB_STATES, hardware=kind, limit=50)),
            ),
        ]
    return templates.TemplateResponse(
        request,
        "jobs.html",
        {
            "depth": queue_depth(session=session),
            "sections": sections,
            "state": state,
            "hardware": kind.name if kind else "",
            "job_id": job_id,
            "states": [member.value for member in JobState],
            "hardware_names": hardware_names(session=session),
            "title": "Jobs",
        },
    )
