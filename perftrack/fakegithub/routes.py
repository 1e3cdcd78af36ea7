"""The fake GitHub's routes, in GitHub's REST shapes (:mod:`perftrack.fakegithub.shapes`): the App
and its installations, repositories and permissions; pull requests and their comments; statuses and
check runs (for an App only, as GitHub)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from perftrack.fakegithub import shapes
from perftrack.fakegithub.auth import require_app_jwt, require_installation_token

accounts_router = APIRouter()
pulls_router = APIRouter()
checks_router = APIRouter()
TOKEN_LIFETIME = dt.timedelta(hours=1)  # an installation token's, as GitHub issues them


@accounts_router.post("/app/installations/{installation_id}/access_tokens", status_code=201)
def access_token(installation_id: int, request: Request) -> dict[str, Any]:
    fake = require_app_jwt(request)
    if installation_id != fake.installation_id:
        raise HTTPException(404, "Not Found")
    if fake.suspended:
        raise HTTPException(403, "This installation has been suspended")
    token = f"ghs_fake{len(fake.issued_tokens) + 1:04d}"
    fake.issued_tokens.append(token)
    expires = (fake.current_time() + TOKEN_LIFETIME).astimezone(dt.UTC).replace(microsecond=0)
    return {"token": token, "expires_at": expires.isoformat().replace("+00:00", "Z")}


@accounts_router.get("/repos/{owner}/{name}/installation")
def installation(owner: str, name: str, request: Request) -> dict[str, Any]:
    fake = require_app_jwt(request)
    if fake.installed_on is not None and f"{owner}/{name}" not in fake.installed_on:
        raise HTTPException(404, "Not Found")
    return shapes.installation(fake.installation_id, owner, fake.app_slug)


@accounts_router.get("/app")
def the_app(request: Request) -> dict[str, Any]:
    return shapes.app(require_app_jwt(request).app_slug)


@accounts_router.get("/user")
def the_user(request: Request) -> dict[str, Any]:
    return shapes.public_user(require_installation_token(request).token_login)


@accounts_router.get("/repos/{owner}/{name}")
def repository(owner: str, name: str, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    if fake.installed_on is not None and f"{owner}/{name}" not in fake.installed_on:
        raise HTTPException(404, "Not Found")
    return shapes.full_repository(f"{owner}/{name}")


@accounts_router.get("/repos/{owner}/{name}/collaborators/{user}/permission")
def permission(owner: str, name: str, user: str, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    level = fake.permissions.get((f"{owner}/{name}", user), "read")
    return shapes.collaborator_permission(user, level)


@pulls_router.get("/repos/{owner}/{name}/pulls/{number}")
def pull(owner: str, name: str, number: int, request: Request) -> dict[str, Any]:
    found = require_installation_token(request).pulls.get((f"{owner}/{name}", number))
    if found is None:
        raise HTTPException(404, "Not Found")
    return shapes.pull_request(f"{owner}/{name}", found)


@pulls_router.get("/repos/{owner}/{name}/pulls/{number}/files")
def pull_files(
    owner: str, name: str, number: int, request: Request, per_page: int = 30, page: int = 1
) -> list[dict[str, Any]]:
    found = require_installation_token(request).pull_files.get((f"{owner}/{name}", number))
    if found is None:
        raise HTTPException(404, "Not Found")
    per_page = min(max(per_page, 1), 100)
    chosen = found[(page - 1) * per_page : page * per_page]
    return [shapes.diff_entry(f"{owner}/{name}", item) for item in chosen]


@pulls_router.get("/repos/{owner}/{name}/compare/{basehead:path}")
def compare(owner: str, name: str, basehead: str, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    base_ref, _, head = basehead.partition("...")
    merge_base = fake.merge_bases.get((base_ref, head))
    if merge_base is None:
        raise HTTPException(404, "Not Found")
    return shapes.comparison(f"{owner}/{name}", base_ref, head, merge_base)


@pulls_router.get("/repos/{owner}/{name}/issues/{number}/comments")
def list_comments(
    owner: str, name: str, number: int, request: Request, page: int = 1, per_page: int = 30
) -> list[dict[str, Any]]:
    fake = require_installation_token(request)
    comments = fake.comments_on(number)[(page - 1) * per_page : page * per_page]
    return [fake.comment_answer(f"{owner}/{name}", comment) for comment in comments]


@pulls_router.post("/repos/{owner}/{name}/issues/{number}/comments", status_code=201)
async def create_comment(owner: str, name: str, number: int, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    body = (await request.json())["body"]
    comment_id = fake.next_id()
    comment = {"id": comment_id, "issue_number": number, "body": body, "user": fake.bot_user(), "edits": 0}
    fake.comments[comment_id] = comment
    return fake.comment_answer(f"{owner}/{name}", comment)


@pulls_router.patch("/repos/{owner}/{name}/issues/comments/{comment_id}")
async def edit_comment(owner: str, name: str, comment_id: int, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    comment = fake.comments.get(comment_id)
    if comment is None:
        raise HTTPException(404, "Not Found")
    comment["body"] = (await request.json())["body"]
    comment["edits"] += 1
    return fake.comment_answer(f"{owner}/{name}", comment)


@pulls_router.post("/repos/{owner}/{name}/issues/comments/{comment_id}/reactions", status_code=201)
async def react(owner: str, name: str, comment_id: int, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    content = (await request.json())["content"]
    reaction = {"id": fake.next_id(), "comment_id": comment_id, "content": content}
    fake.reactions.append(reaction)
    return shapes.reaction(reaction["id"], reaction["content"], fake.bot_user()["login"])


@checks_router.post("/repos/{owner}/{name}/statuses/{sha}", status_code=201)
async def set_status(owner: str, name: str, sha: str, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    status = {"id": fake.next_id(), "sha": sha, **(await request.json())}
    fake.statuses.append(status)
    return shapes.status(f"{owner}/{name}", status["id"], sha, status, fake.bot_user()["login"])


@checks_router.post("/repos/{owner}/{name}/check-runs", status_code=201)
async def create_check_run(owner: str, name: str, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    if fake.app_public_key is None:  # Checks are for Apps only
        raise HTTPException(403, "You must authenticate via a GitHub App.")
    sent = await request.json()
    kept = {"status": "queued", **sent, "id": fake.next_id()}
    return fake.keep_check_run(f"{owner}/{name}", kept)


@checks_router.patch("/repos/{owner}/{name}/check-runs/{check_run_id}")
async def edit_check_run(owner: str, name: str, check_run_id: int, request: Request) -> dict[str, Any]:
    fake = require_installation_token(request)
    kept = fake.check_runs.get(check_run_id)
    if kept is None or fake.app_public_key is None:
        raise HTTPException(404, "Not Found")
    sent = await request.json()
    if "conclusion" in sent:  # GitHub completes a check run given a conclusion
        sent.setdefault("status", "completed")
    return fake.keep_check_run(f"{owner}/{name}", {**kept, **sent})


@checks_router.get("/repos/{owner}/{name}/commits/{ref}/check-runs")
def list_check_runs(
    owner: str,
    name: str,
    ref: str,
    request: Request,
    check_name: str | None = None,
    page: int = 1,
    per_page: int = 30,
) -> dict[str, Any]:
    fake = require_installation_token(request)
    found = [
        run
        for run in fake.check_runs.values()
        if run["head_sha"] == ref and (check_name is None or run["name"] == check_name)
    ]
    chosen = found[(page - 1) * per_page : page * per_page]
    answered = [shapes.check_run(f"{owner}/{name}", run, fake.app_slug) for run in chosen]
    return {"total_count": len(found), "check_runs": answered}
