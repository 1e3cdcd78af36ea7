"""A fake GitHub REST API for the bot's tests: a small FastAPI app holding state and recording calls.

It answers what the bot asks (pulls, compare, collaborators' permission, issue comments,
reactions, statuses, check runs (for an App only, as GitHub), App installation tokens, who the bot is) in GitHub's full shapes
(``github_shapes``), and records every exchange (``exchanges``) for the contract check against
GitHub's published description (``github_contract``, run after each test by tests/conftest.py).
``fail_next(n)`` makes the next ``n`` calls answer 502 (``carried_out=True``: after doing what was
asked, an answer lost on the way);
``rate_limit_next(n, reset_at=...)`` answers as GitHub's rate limits do; ``hold`` makes every call wait
until that event is set (a GitHub that hangs); ``installed_on`` leaves the App off other repositories;
``suspended`` suspends its installation. Use it in-process through
:meth:`FakeGithub.transport` (an ``httpx.MockTransport``).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from tests.fakes import github_shapes as shapes
from tests.fakes.github_contract import Exchange

ENTERPRISE_PREFIX = "/api/v3"
# Every fake made, in order: tests/conftest.py holds each test's fakes' exchanges to GitHub's description.
MADE: list[FakeGithub] = []


@dataclass
class Call:
    """One request the fake answered."""

    method: str
    path: str
    status: int
    authorization: str
    body: Any


@dataclass
class FakeGithub:
    """State of the fake: pulls, comments, reactions, statuses, collaborators, App installations."""

    app_public_key: str | None = None
    app_slug: str = "perftrack"
    token_login: str = "perftrack-bot"  # the user a personal token belongs to
    installed_on: set[str] | None = None  # repositories with the App installed (None: every one)
    hold: threading.Event | None = None  # every call waits for this event (a slow GitHub, on cue)
    now: dt.datetime = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
    installation_id: int = 7001
    suspended: bool = False  # the installation is suspended: no access token is issued
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    pull_files: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    merge_bases: dict[tuple[str, str], str] = field(default_factory=dict)
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Each check run's states as created and edited, in order: (id, status, conclusion, title).
    check_run_history: list[tuple[int, str, str | None, str]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    # Every request and answer, for the contract check (tests/fakes/github_contract.py).
    exchanges: list[Exchange] = field(default_factory=list)
    issued_tokens: list[str] = field(default_factory=list)
    _failures: int = 0
    _failing_methods: tuple[str, ...] = ()
    _failure_status: int = 502
    _failure_path: str = ""
    _failure_carried_out: bool = False
    _failure_headers: dict[str, str] = field(default_factory=dict)
    _failure_body: dict[str, str] | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(900001))

    def __post_init__(self) -> None:
        MADE.append(self)

    def add_pull(
        self,
        repository: str,
        number: int,
        *,
        head_sha: str,
        base_ref: str = "main",
        merge_base: str,
        files: list[str] | None = None,
        fork: str | None = None,
    ) -> None:
        """A pull request whose merge base with ``base_ref`` is ``merge_base``, touching ``files``;
        ``fork``: the owner/name its head lives in (default: the repository itself)."""
        if files is not None or (repository, number) not in self.pull_files:  # a new head keeps its files
            self.pull_files[(repository, number)] = [
                {
                    "sha": f"{index:040x}",
                    "filename": path,
                    "status": "modified",
                    "additions": 1,
                    "deletions": 0,
                }
                for index, path in enumerate(files or [])
            ]
        self.pulls[(repository, number)] = {
            "number": number,
            "html_url": f"https://github.com/{repository}/pull/{number}",
            "state": "open",
            "head": {"sha": head_sha, "ref": f"feature-{number}", "repo": {"full_name": fork or repository}},
            "base": {"ref": base_ref, "sha": merge_base, "repo": {"full_name": repository}},
        }
        self.merge_bases[(base_ref, head_sha)] = merge_base

    def fail_next(
        self,
        count: int,
        *,
        methods: tuple[str, ...] = ("GET", "POST", "PATCH"),
        status: int = 502,
        path: str = "",
        carried_out: bool = False,
    ) -> None:
        """Answer the next ``count`` calls (of those methods: ``("POST", "PATCH")`` fails only writes;
        whose path contains ``path``) with ``status`` (502 by default; 422 or 403: refused for good);
        ``carried_out``: each call takes effect first and only its answer is lost."""
        self._failures = count
        self._failing_methods = methods
        self._failure_status = status
        self._failure_path = path
        self._failure_carried_out = carried_out
        self._failure_headers = {}
        self._failure_body = None

    def rate_limit_next(
        self,
        count: int,
        *,
        reset_at: dt.datetime,
        methods: tuple[str, ...] = ("GET", "POST", "PATCH"),
        path: str = "",
        status: int = 403,
        retry_after_s: int | None = None,
    ) -> None:
        """Answer the next ``count`` calls (as :meth:`fail_next` picks them) as GitHub's primary rate
        limit does (403 or 429, ``x-ratelimit-remaining: 0``, the reset in epoch seconds), or its
        secondary rate limit with ``retry_after_s`` (``retry-after``)."""
        self.fail_next(count, methods=methods, status=status, path=path)
        reset = str(int(reset_at.timestamp()))
        self._failure_headers = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0" if retry_after_s is None else "4000",
            "x-ratelimit-reset": reset,
            "x-ratelimit-used": "5000" if retry_after_s is None else "1000",
            "x-ratelimit-resource": "core",
        }
        documentation = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
        if retry_after_s is None:
            message = f"API rate limit exceeded for installation ID {self.installation_id}."
        else:
            self._failure_headers["retry-after"] = str(retry_after_s)
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
            )
            documentation += "#about-secondary-rate-limits"
        self._failure_body = {"message": message, "documentation_url": documentation}

    def bot_user(self) -> dict[str, str]:
        """Who the bot's comments are by: ``<slug>[bot]`` for an App, the token's user otherwise."""
        if self.app_public_key is not None:
            return {"login": f"{self.app_slug}[bot]", "type": "Bot"}
        return {"login": self.token_login, "type": "User"}

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        """The comments of an issue or pull request, oldest first."""
        return [comment for comment in self.comments.values() if comment["issue_number"] == number]

    def comment_answer(self, repository: str, comment: dict[str, Any]) -> dict[str, Any]:
        """A kept comment as GitHub answers it (an ``issue-comment``)."""
        return shapes.issue_comment(
            repository, comment["id"], comment["issue_number"], comment["body"], comment["user"]["login"]
        )

    def calls_to(self, method: str, fragment: str) -> list[Call]:
        """The recorded calls with that method whose path contains ``fragment``."""
        return [call for call in self.calls if call.method == method and fragment in call.path]

    def transport(self) -> httpx.MockTransport:
        """An httpx transport that hands every request to the fake's app (GitHub Enterprise's
        ``/api/v3`` prefix is accepted too)."""
        client = TestClient(self.app(), raise_server_exceptions=True)

        def handle(request: httpx.Request) -> httpx.Response:
            path = request.url.raw_path.decode().removeprefix(ENTERPRISE_PREFIX)
            answer = client.request(
                request.method,
                path,
                headers={key: value for key, value in request.headers.items() if key.lower() != "host"},
                content=request.content,
            )
            self.exchanges.append(
                Exchange(
                    method=request.method,
                    path=path,
                    body=json.loads(request.content) if request.content else None,
                    status=answer.status_code,
                    headers={key.lower(): value for key, value in answer.headers.items()},
                    answer=answer.json() if answer.content else None,
                )
            )
            return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

        return httpx.MockTransport(handle)

    def app(self) -> FastAPI:
        """The FastAPI app speaking GitHub's REST shapes."""
        app = FastAPI()
        fake = self

        @app.middleware("http")
        async def record(request: Request, call_next: Any) -> Any:
            raw = await request.body()
            body: Any = json.loads(raw) if raw else None
            if fake.hold is not None:
                fake.hold.wait(timeout=120)
            path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            if fake._failures > 0 and request.method in fake._failing_methods and fake._failure_path in path:
                fake._failures -= 1
                status = fake._failure_status
                if fake._failure_carried_out:
                    await call_next(request)
                fake.calls.append(
                    Call(request.method, path, status, request.headers.get("authorization", ""), body)
                )
                message = "Bad Gateway" if status >= 500 else "Validation Failed"
                answer = fake._failure_body or shapes.error(message)
                return JSONResponse(answer, status_code=status, headers=fake._failure_headers)
            response = await call_next(request)
            fake.calls.append(
                Call(
                    request.method, path, response.status_code, request.headers.get("authorization", ""), body
                )
            )
            return response

        def require_installation_token(request: Request) -> None:
            header = request.headers.get("authorization", "")
            if fake.app_public_key is None:
                if not header.startswith("Bearer "):
                    raise HTTPException(401, "Requires authentication")
                return
            if header.removeprefix("Bearer ") not in fake.issued_tokens:
                raise HTTPException(401, "Bad credentials")

        def require_app_jwt(request: Request) -> None:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            assert fake.app_public_key is not None
            try:
                # Checked against the fake's clock, not the machine's: tests run at a fixed time.
                claims = jwt.decode(
                    token,
                    fake.app_public_key,
                    algorithms=["RS256"],
                    options={"verify_exp": False, "verify_iat": False},
                )
            except jwt.PyJWTError as error:
                raise HTTPException(
                    401, f"A JSON web token could not be decoded: {type(error).__name__}"
                ) from None
            now = fake.now.timestamp()
            if not claims["iat"] <= now < claims["exp"] or claims["exp"] - claims["iat"] > 600:
                raise HTTPException(401, "'Expiration time' claim ('exp') is too far in the future or past")

        @app.exception_handler(HTTPException)
        async def github_error(_request: Request, error: HTTPException) -> JSONResponse:
            return JSONResponse(shapes.error(str(error.detail)), status_code=error.status_code)

        @app.post("/app/installations/{installation_id}/access_tokens", status_code=201)
        def access_token(installation_id: int, request: Request) -> dict[str, Any]:
            require_app_jwt(request)
            if installation_id != fake.installation_id:
                raise HTTPException(404, "Not Found")
            if fake.suspended:
                raise HTTPException(403, "This installation has been suspended")
            token = f"ghs_fake{len(fake.issued_tokens) + 1:04d}"
            fake.issued_tokens.append(token)
            expires = dt.datetime(2026, 6, 1, 13, 0, tzinfo=dt.UTC)
            return {"token": token, "expires_at": expires.isoformat().replace("+00:00", "Z")}

        @app.get("/repos/{owner}/{name}/installation")
        def installation(owner: str, name: str, request: Request) -> dict[str, Any]:
            require_app_jwt(request)
            if fake.installed_on is not None and f"{owner}/{name}" not in fake.installed_on:
                raise HTTPException(404, "Not Found")
            return shapes.installation(fake.installation_id, owner, fake.app_slug)

        @app.get("/app")
        def the_app(request: Request) -> dict[str, Any]:
            require_app_jwt(request)
            return shapes.app(fake.app_slug)

        @app.get("/user")
        def the_user(request: Request) -> dict[str, Any]:
            require_installation_token(request)
            return shapes.public_user(fake.token_login)

        @app.get("/repos/{owner}/{name}")
        def repository(owner: str, name: str, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            if fake.installed_on is not None and f"{owner}/{name}" not in fake.installed_on:
                raise HTTPException(404, "Not Found")
            return shapes.full_repository(f"{owner}/{name}")

        @app.get("/repos/{owner}/{name}/collaborators/{user}/permission")
        def permission(owner: str, name: str, user: str, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            level = fake.permissions.get((f"{owner}/{name}", user), "read")
            return shapes.collaborator_permission(user, level)

        @app.get("/repos/{owner}/{name}/pulls/{number}")
        def pull(owner: str, name: str, number: int, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            found = fake.pulls.get((f"{owner}/{name}", number))
            if found is None:
                raise HTTPException(404, "Not Found")
            return shapes.pull_request(f"{owner}/{name}", found)

        @app.get("/repos/{owner}/{name}/pulls/{number}/files")
        def pull_files(
            owner: str, name: str, number: int, request: Request, per_page: int = 30, page: int = 1
        ) -> list[dict[str, Any]]:
            require_installation_token(request)
            found = fake.pull_files.get((f"{owner}/{name}", number))
            if found is None:
                raise HTTPException(404, "Not Found")
            per_page = min(max(per_page, 1), 100)
            chosen = found[(page - 1) * per_page : page * per_page]
            return [shapes.diff_entry(f"{owner}/{name}", item) for item in chosen]

        @app.get("/repos/{owner}/{name}/compare/{basehead:path}")
        def compare(owner: str, name: str, basehead: str, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            base_ref, _, head = basehead.partition("...")
            merge_base = fake.merge_bases.get((base_ref, head))
            if merge_base is None:
                raise HTTPException(404, "Not Found")
            return shapes.comparison(f"{owner}/{name}", base_ref, head, merge_base)

        @app.get("/repos/{owner}/{name}/issues/{number}/comments")
        def list_comments(
            owner: str, name: str, number: int, request: Request, page: int = 1, per_page: int = 30
        ) -> list[dict[str, Any]]:
            require_installation_token(request)
            comments = fake.comments_on(number)[(page - 1) * per_page : page * per_page]
            return [fake.comment_answer(f"{owner}/{name}", comment) for comment in comments]

        @app.post("/repos/{owner}/{name}/issues/{number}/comments", status_code=201)
        async def create_comment(owner: str, name: str, number: int, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            body = (await request.json())["body"]
            comment_id = next(fake._ids)
            comment = {
                "id": comment_id,
                "issue_number": number,
                "body": body,
                "user": fake.bot_user(),
                "edits": 0,
            }
            fake.comments[comment_id] = comment
            return fake.comment_answer(f"{owner}/{name}", comment)

        @app.patch("/repos/{owner}/{name}/issues/comments/{comment_id}")
        async def edit_comment(owner: str, name: str, comment_id: int, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            comment = fake.comments.get(comment_id)
            if comment is None:
                raise HTTPException(404, "Not Found")
            comment["body"] = (await request.json())["body"]
            comment["edits"] += 1
            return fake.comment_answer(f"{owner}/{name}", comment)

        @app.post("/repos/{owner}/{name}/issues/comments/{comment_id}/reactions", status_code=201)
        async def react(owner: str, name: str, comment_id: int, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            reaction = {
                "id": next(fake._ids),
                "comment_id": comment_id,
                "content": (await request.json())["content"],
            }
            fake.reactions.append(reaction)
            return shapes.reaction(reaction["id"], reaction["content"], fake.bot_user()["login"])

        @app.post("/repos/{owner}/{name}/statuses/{sha}", status_code=201)
        async def set_status(owner: str, name: str, sha: str, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            status = {"id": next(fake._ids), "sha": sha, **(await request.json())}
            fake.statuses.append(status)
            return shapes.status(f"{owner}/{name}", status["id"], sha, status, fake.bot_user()["login"])

        @app.post("/repos/{owner}/{name}/check-runs", status_code=201)
        async def create_check_run(owner: str, name: str, request: Request) -> dict[str, Any]:
            require_installation_token(request)
            if fake.app_public_key is None:  # Checks are for Apps only
                raise HTTPException(403, "You must authenticate via a GitHub App.")
            sent = await request.json()
            kept = {"status": "queued", **sent, "id": next(fake._ids)}
            return fake.keep_check_run(f"{owner}/{name}", kept)

        @app.patch("/repos/{owner}/{name}/check-runs/{check_run_id}")
        async def edit_check_run(
            owner: str, name: str, check_run_id: int, request: Request
        ) -> dict[str, Any]:
            require_installation_token(request)
            kept = fake.check_runs.get(check_run_id)
            if kept is None or fake.app_public_key is None:
                raise HTTPException(404, "Not Found")
            sent = await request.json()
            if "conclusion" in sent:  # GitHub completes a check run given a conclusion
                sent.setdefault("status", "completed")
            return fake.keep_check_run(f"{owner}/{name}", {**kept, **sent})

        @app.get("/repos/{owner}/{name}/commits/{ref}/check-runs")
        def list_check_runs(
            owner: str,
            name: str,
            ref: str,
            request: Request,
            check_name: str | None = None,
            page: int = 1,
            per_page: int = 30,
        ) -> dict[str, Any]:
            require_installation_token(request)
            found = [
                run
                for run in fake.check_runs.values()
                if run["head_sha"] == ref and (check_name is None or run["name"] == check_name)
            ]
            chosen = found[(page - 1) * per_page : page * per_page]
            answered = [shapes.check_run(f"{owner}/{name}", run, fake.app_slug) for run in chosen]
            return {"total_count": len(found), "check_runs": answered}

        return app

    def keep_check_run(self, repository: str, kept: dict[str, Any]) -> dict[str, Any]:
        """Store a created or edited check run as GitHub would (a completed one has a conclusion
        and a completion time) and answer it."""
        if kept["status"] == "completed" and not kept.get("conclusion"):
            raise HTTPException(422, "Validation Failed: a completed check run needs a conclusion")
        if kept["status"] == "completed":
            kept.setdefault("completed_at", shapes.TIME)
        self.check_runs[kept["id"]] = kept
        title = str((kept.get("output") or {}).get("title", ""))
        self.check_run_history.append((kept["id"], kept["status"], kept.get("conclusion"), title))
        return shapes.check_run(repository, kept, self.app_slug)
