"""``/commits/{sha}``: every result measured at a commit, and the alerts that start at or blame it."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.errors import NotFound
from tracker.views.commit import commit_view, find_commits
from web.deps import SessionDep
from web.pages.templating import templates

router = APIRouter()


@router.get("/commits/{sha}", response_class=HTMLResponse)
def commit_page(request: Request, sha: str, session: SessionDep) -> HTMLResponse:
    """One commit, looked up by any unambiguous abbreviation; an ambiguous one lists the matches."""
    matches = find_commits(session=session, sha=sha)
    if not matches:
        raise NotFound(f"no commit {sha}")
    if len(matches) > 1:
        return templates.TemplateResponse(
            request,
            "commit.html",
            {"ambiguous": sha, "matches": matches, "title": f"Commit {sha} is ambiguous"},
            status_code=409,
        )
    view = commit_view(session=session, commit=matches[0])
    return templates.TemplateResponse(
        request,
        "commit.html",
        {"view": view, "commit": view.commit, "title": f"Commit {view.commit.short_sha}"},
    )
