"""The bot and the fake GitHub against GitHub's published description (tests/fakes/github_contract.py).

Every test that uses the fake is checked by ``github_contract_check`` in tests/conftest.py; here: the
trimmed copy is what the extraction script pins, every call in tracker/github names an operation it
holds, the check refuses what GitHub would, the fake's answers (errors and rate limits included) are
GitHub's, and the webhook payloads the tests send are GitHub's too.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.conftest import DATA, ROOT
from tests.fakes import github_shapes as shapes
from tests.fakes.fake_github import FakeGithub
from tests.fakes.github_contract import Exchange, event_problems, operation, problems, rest, webhooks

REPO = "sgl-project/sglang"
PR = 43650
HEAD = "2" * 40
BASE = "1" * 40
_CALL = re.compile(r"""(?:request|_send)\(\s*"([A-Z]+)",\s*f?"([^"]+)\"""")


def extraction_script() -> ModuleType:
    path = ROOT / "scripts" / "github_contract_extract.py"
    spec = importlib.util.spec_from_file_location("github_contract_extract", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trimmed_copy_is_the_pinned_packages_and_the_operations_the_script_names() -> None:
    script = extraction_script()
    assert rest()["source"]["package"] == "@octokit/openapi"
    assert rest()["source"]["version"] == script.OPENAPI_VERSION
    assert webhooks()["source"]["version"] == script.WEBHOOKS_VERSION
    held = [(item["method"].lower(), item["path"]) for item in rest()["operations"]]
    assert held == script.OPERATIONS
    events = {f"{event}.{action}" if action else event for event, action in script.EVENTS}
    assert set(webhooks()["events"]) == events


def calls_in_the_bot() -> list[tuple[str, str]]:
    """Every ``request``/``_send`` call in tracker/github: method and path, placeholders filled."""
    found = []
    for module in sorted((ROOT / "tracker" / "github").glob("*.py")):
        for method, template in _CALL.findall(module.read_text()):
            path = template.replace("{repository}", "owner/name")
            found.append((method, re.sub(r"\{[^}]+\}", "1", path)))
    return found


def test_every_call_the_bot_makes_names_an_operation_github_describes() -> None:
    calls = calls_in_the_bot()
    assert len(calls) >= 12, calls  # the scan still finds the calls
    for method, path in calls:
        described = operation(method, path)
        assert described is not None, f"{method} {path}: not in the trimmed description"
        query = re.findall(r"[?&]([a-z_]+)=", path)
        assert set(query) <= set(described["query"]), (method, path)


def exchange(method: str, path: str, status: int, answer: Any, **changes: Any) -> Exchange:
    defaults: dict[str, Any] = {"body": None, "headers": {}}
    return Exchange(method=method, path=path, status=status, answer=answer, **(defaults | changes))


def a_pull() -> dict[str, Any]:
    kept = {
        "number": PR,
        "head": {"sha": HEAD, "ref": "feature", "repo": {"full_name": REPO}},
        "base": {"sha": BASE, "ref": "main", "repo": {"full_name": REPO}},
    }
    return shapes.pull_request(REPO, kept)


def without(answer: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in answer.items() if name != key}


COMMENTS = f"/repos/{REPO}/issues/{PR}/comments"
RATE_LIMITED = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1780318800"}


@pytest.mark.parametrize(
    ("sent", "refusal"),
    [
        (exchange("GET", f"/repos/{REPO}/pulls/{PR}/reviews", 200, []), "GitHub has no such operation"),
        (exchange("DELETE", f"/repos/{REPO}/pulls/{PR}", 204, None), "GitHub has no such operation"),
        (exchange("GET", f"{COMMENTS}?per_page=100&sort=asc", 200, []), "query parameter 'sort'"),
        (
            exchange(
                "POST", f"/repos/{REPO}/issues/comments/5/reactions", 201, None, body={"content": "tada"}
            ),
            "request body",
        ),
        (exchange("POST", COMMENTS, 201, None, body={"text": "hi"}), "request body"),
        (
            exchange("POST", f"/repos/{REPO}/statuses/{HEAD}", 201, None, body={"state": "running"}),
            "request body",
        ),
        (exchange("GET", f"/repos/{REPO}/pulls/{PR}", 200, without(a_pull(), "head")), "head"),
        (exchange("GET", f"/repos/{REPO}/pulls/{PR}", 200, {**a_pull(), "state": "merged"}), "merged"),
        (
            # The fake's comments once carried its own bookkeeping: GitHub names no such field.
            exchange(
                "POST",
                COMMENTS,
                201,
                {**shapes.issue_comment(REPO, 9, PR, "hi", "perftrack-bot"), "issue_number": PR},
                body={"body": "hi"},
            ),
            "issue_number",
        ),
        (
            exchange("PATCH", f"/repos/{REPO}/issues/comments/9", 201, None, body={"body": "x"}),
            "answered 201",
        ),
        (
            exchange("GET", f"/repos/{REPO}/pulls/{PR}", 404, {"detail": "Not Found"}),
            "'detail' was unexpected",
        ),
        (
            exchange("POST", COMMENTS, 422, {"message": "Validation Failed"}, body={"body": "x"}),
            "documentation_url",
        ),
        (
            exchange(
                "GET",
                f"/repos/{REPO}/pulls/{PR}",
                403,
                shapes.error("API rate limit exceeded"),
                headers={"x-ratelimit-remaining": "0"},
            ),
            "carries X-RateLimit-Reset",
        ),
        (
            exchange(
                "GET", f"/repos/{REPO}/pulls/{PR}", 502, shapes.error("Bad Gateway"), headers=RATE_LIMITED
            ),
            "a rate limit answers 403 or 429",
        ),
        (
            exchange(
                "GET",
                f"/repos/{REPO}/pulls/{PR}",
                403,
                shapes.error("API rate limit exceeded"),
                headers={**RATE_LIMITED, "x-ratelimit-reset": "in an hour"},
            ),
            "not an integer",
        ),
    ],
)
def test_the_check_refuses_what_github_would_not_send_or_take(sent: Exchange, refusal: str) -> None:
    found = problems(sent)
    assert any(refusal in problem for problem in found), found


@pytest.fixture
def fake() -> FakeGithub:
    fake = FakeGithub()
    fake.add_pull(REPO, PR, head_sha=HEAD, merge_base=BASE, files=["python/sglang/a.py", "docs/a b.md"])
    fake.permissions[(REPO, "maintainer-m")] = "maintain"
    return fake


@pytest.fixture
def http(fake: FakeGithub) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url="https://api.github.com",
        transport=fake.transport(),
        headers={"Authorization": "Bearer ghp_contract"},
    ) as client:
        yield client


def statuses_and_problems(fake: FakeGithub) -> tuple[list[int], list[str]]:
    found = [problem for item in fake.exchanges for problem in problems(item)]
    return [item.status for item in fake.exchanges], found


def test_the_fakes_answers_to_what_the_bot_asks_are_githubs(fake: FakeGithub, http: httpx.Client) -> None:
    http.get("/user")
    http.get(f"/repos/{REPO}")
    http.get(f"/repos/{REPO}/collaborators/maintainer-m/permission")
    http.get(f"/repos/{REPO}/pulls/{PR}")
    http.get(f"/repos/{REPO}/pulls/{PR}/files?per_page=100&page=1")
    http.get(f"/repos/{REPO}/compare/main...{HEAD}")
    created = http.post(COMMENTS, json={"body": "queued <!-- perftrack:comparison:1 -->"}).json()
    http.patch(f"/repos/{REPO}/issues/comments/{created['id']}", json={"body": "done"})
    http.get(f"{COMMENTS}?per_page=100&page=1")
    http.post(f"/repos/{REPO}/issues/comments/{created['id']}/reactions", json={"content": "eyes"})
    status = {"state": "pending", "context": "perftrack/perf", "description": "1 of 4", "target_url": None}
    http.post(f"/repos/{REPO}/statuses/{HEAD}", json=status)
    seen, found = statuses_and_problems(fake)
    assert seen == [200, 200, 200, 200, 200, 200, 201, 200, 200, 201, 201]
    assert found == []


RESET = dt.datetime(2026, 6, 1, 13, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("mode", "method", "path", "expected"),
    [
        (lambda fake: None, "GET", f"/repos/{REPO}/pulls/404", 404),
        (lambda fake: fake.fail_next(1, status=422), "POST", COMMENTS, 422),
        (lambda fake: fake.fail_next(1), "GET", f"/repos/{REPO}/pulls/{PR}", 502),
        (lambda fake: fake.rate_limit_next(1, reset_at=RESET), "GET", f"/repos/{REPO}/pulls/{PR}", 403),
        (lambda fake: fake.rate_limit_next(1, reset_at=RESET), "POST", COMMENTS, 403),
        (
            lambda fake: fake.rate_limit_next(1, reset_at=RESET, status=429, retry_after_s=60),
            "POST",
            COMMENTS,
            429,
        ),
    ],
    ids=[
        "not-found",
        "validation-failed",
        "bad-gateway",
        "rate-limited-read",
        "rate-limited-write",
        "secondary",
    ],
)
def test_the_fakes_error_answers_are_githubs(
    fake: FakeGithub,
    http: httpx.Client,
    mode: Callable[[FakeGithub], None],
    method: str,
    path: str,
    expected: int,
) -> None:
    mode(fake)
    http.request(method, path, json={"body": "x"} if method == "POST" else None)
    seen, found = statuses_and_problems(fake)
    assert seen == [expected]
    assert found == []


def payload(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / "github" / name).read_text())
    return loaded


def edited_comment() -> dict[str, Any]:
    edited = payload("issue_comment_created_pr.json")
    edited["action"] = "edited"
    edited["changes"] = {"body": {"from": "/perf qwen-imag-t2i-1024"}}
    return edited


def labeled() -> dict[str, Any]:
    pushed = payload("pull_request_synchronize.json")
    pushed["action"] = "labeled"
    pushed["label"] = shapes.label(REPO, "run-perf")
    pushed["pull_request"]["labels"].append(shapes.label(REPO, "run-perf"))
    for key in ("before", "after"):
        del pushed[key]
    return pushed


def closed() -> dict[str, Any]:
    pushed = payload("pull_request_synchronize.json")
    pushed["action"] = "closed"
    pushed["pull_request"]["state"] = "closed"
    pushed["pull_request"]["closed_at"] = shapes.TIME
    for key in ("before", "after"):
        del pushed[key]
    return pushed


@pytest.mark.parametrize(
    ("event", "build"),
    [
        ("ping", lambda: payload("ping.json")),
        ("issues", lambda: payload("issues_opened.json")),
        ("issue_comment", lambda: payload("issue_comment_created_pr.json")),
        ("issue_comment", edited_comment),
        ("pull_request", lambda: payload("pull_request_synchronize.json")),
        ("pull_request", labeled),
        ("pull_request", closed),
    ],
    ids=["ping", "issues-opened", "comment-created", "comment-edited", "synchronize", "labeled", "closed"],
)
def test_the_webhook_payloads_the_tests_send_are_githubs(
    event: str, build: Callable[[], dict[str, Any]]
) -> None:
    assert event_problems(event, build()) == []


def test_a_payload_github_would_not_send_is_refused() -> None:
    trimmed = copy.deepcopy(payload("issue_comment_created_pr.json"))
    del trimmed["comment"]["user"]
    trimmed["issue"]["number"] = "43650"
    found = event_problems("issue_comment", trimmed)
    assert any("user" in problem for problem in found), found
    assert any("43650" in problem for problem in found), found
    assert event_problems("pull_request", {**labeled(), "label": {"name": "run-perf"}}) != []
    assert event_problems("check_run", {"action": "created"}) != []
