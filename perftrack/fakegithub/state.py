"""The fake GitHub's state: pulls, comments, reactions, statuses, check runs, collaborators and App
installations, with the calls it answered and the failures it was told to answer next.

The routes (:mod:`perftrack.fakegithub.app`) read and change this state; tests and the demo set it
up and read it back. ``fail_next(n)`` makes the next ``n`` calls answer 502 (``carried_out=True``:
after doing what was asked, an answer lost on the way); ``rate_limit_next(n, reset_at=...)``
answers as GitHub's rate limits do; ``hold`` makes every call wait until that event is set (a
GitHub that hangs); ``installed_on`` leaves the App off other repositories; ``suspended`` suspends
its installation.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, HTTPException

from perftrack.fakegithub import shapes
from perftrack.fakegithub.app import build_app


@dataclass
class Call:
    """One request the fake answered."""

    method: str
    path: str
    status: int
    authorization: str
    body: Any


@dataclass(frozen=True)
class PlannedFailure:
    """An answer :meth:`FakeGithub.fail_next` or :meth:`FakeGithub.rate_limit_next` planned."""

    status: int
    carried_out: bool  # the call takes effect first; only its answer is lost
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeGithub:
    """State of the fake: pulls, comments, reactions, statuses, collaborators, App installations."""

    app_public_key: str | None = None
    app_slug: str = "perftrack"
    token_login: str = "perftrack-bot"  # noqa: S105 (a login: the user a personal token belongs to)
    installed_on: set[str] | None = None  # repositories with the App installed (None: every one)
    hold: threading.Event | None = None  # every call waits for this event (a slow GitHub, on cue)
    now: dt.datetime = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
    # The fake's clock: tests keep ``now`` fixed; a fake served beside a live tracker (the demo)
    # passes the wall clock, so App tokens signed minutes apart stay valid.
    clock: Callable[[], dt.datetime] | None = None
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
    issued_tokens: list[str] = field(default_factory=list)
    _failures: int = 0
    _failing_methods: tuple[str, ...] = ()
    _failure_status: int = 502
    _failure_path: str = ""
    _failure_carried_out: bool = False
    _failure_headers: dict[str, str] = field(default_factory=dict)
    _failure_body: dict[str, str] | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(900001))

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

    def next_id(self) -> int:
        """A new id for a comment, reaction, status or check run."""
        return next(self._ids)

    def record(self, method: str, path: str, status: int, authorization: str, body: Any) -> None:
        """Keep a call the fake answered."""
        self.calls.append(Call(method, path, status, authorization, body))

    def take_failure(self, method: str, path: str) -> PlannedFailure | None:
        """The failure planned for this call (counted off), if :meth:`fail_next` planned one."""
        if self._failures <= 0 or method not in self._failing_methods or self._failure_path not in path:
            return None
        self._failures -= 1
        status = self._failure_status
        message = "Bad Gateway" if status >= 500 else "Validation Failed"
        return PlannedFailure(
            status=status,
            carried_out=self._failure_carried_out,
            headers=dict(self._failure_headers),
            body=self._failure_body or shapes.error(message),
        )

    def current_time(self) -> dt.datetime:
        """The fake's time: its clock when it has one, else the fixed ``now``."""
        return self.clock() if self.clock is not None else self.now

    def post_comment(self, repository: str, number: int, body: str, login: str) -> dict[str, Any]:
        """A comment ``login`` posts on pull request ``number``; returns it as GitHub answers it."""
        comment_id = self.next_id()
        user = {"login": login, "type": "User"}
        kept = {"id": comment_id, "issue_number": number, "body": body, "user": user, "edits": 0}
        self.comments[comment_id] = kept
        return self.comment_answer(repository, kept)

    def app(self) -> FastAPI:
        """The FastAPI app speaking GitHub's REST shapes over this state."""
        return build_app(self)

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
