"""The webhook deliveries the fake GitHub sends: a comment posted on a pull request becomes an
``issue_comment`` ``created`` delivery, signed as GitHub signs them (``X-Hub-Signature-256``:
HMAC-SHA256 of the raw body under the webhook's secret) and POSTed to the receiver's URL."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

import httpx

from perftrack.fakegithub import shapes
from perftrack.fakegithub.state import FakeGithub


def comment_delivery(
    fake: FakeGithub, repository: str, number: int, comment: dict[str, Any]
) -> dict[str, Any]:
    """The ``issue_comment`` ``created`` payload of ``comment`` (as the fake answered it) on pull
    request ``number``, as GitHub's webhook description has it."""
    payload: dict[str, Any] = {
        "action": "created",
        "issue": pull_issue(repository, number, fake.pulls.get((repository, number), {})),
        "comment": {**comment, "reactions": _no_reactions(str(comment["url"]))},
        "repository": shapes.repository(repository),
        "sender": comment["user"],
    }
    if fake.app_public_key is not None:
        payload["installation"] = {
            "id": fake.installation_id,
            "node_id": f"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{fake.installation_id}",
        }
    return payload


def pull_issue(repository: str, number: int, kept: dict[str, Any]) -> dict[str, Any]:
    """A pull request as the issue a comment is on (``issue`` in an ``issue_comment`` delivery)."""
    url = f"{shapes.API}/repos/{repository}/issues/{number}"
    html_url = f"{shapes.WEB}/{repository}/pull/{number}"
    owner = repository.partition("/")[0]
    return {
        "url": url,
        "repository_url": f"{shapes.API}/repos/{repository}",
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "html_url": html_url,
        "id": shapes.number_for(f"{repository}#{number}"),
        "node_id": f"I_{shapes.number_for(f'{repository}#{number}')}",
        "number": number,
        "title": str(kept.get("title", f"Pull request #{number}")),
        "user": shapes.user(owner),
        "labels": [],
        "state": kept.get("state", "open"),
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "created_at": shapes.TIME,
        "updated_at": shapes.TIME,
        "closed_at": None,
        "author_association": "MEMBER",
        "active_lock_reason": None,
        "body": None,
        "reactions": _no_reactions(url),
        "timeline_url": f"{url}/timeline",
        "performed_via_github_app": None,
        "pull_request": {
            "url": f"{shapes.API}/repos/{repository}/pulls/{number}",
            "html_url": html_url,
            "diff_url": f"{html_url}.diff",
            "patch_url": f"{html_url}.patch",
            "merged_at": None,
        },
    }


def _no_reactions(url: str) -> dict[str, Any]:
    counts = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")
    return {"url": f"{url}/reactions", "total_count": 0, **dict.fromkeys(counts, 0)}


def signature(secret: str, body: bytes) -> str:
    """``X-Hub-Signature-256``'s value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(
    url: str, event: str, payload: dict[str, Any], *, secret: str, timeout_s: float = 30
) -> httpx.Response:
    """POST one signed delivery of ``event`` to ``url``, as GitHub does; the receiver's answer."""
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/fake",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature(secret, body),
    }
    return httpx.post(url, content=body, headers=headers, timeout=timeout_s)


def post_and_deliver(
    fake: FakeGithub, *, repository: str, number: int, body: str, login: str, webhook_url: str, secret: str
) -> httpx.Response:
    """``login`` comments ``body`` on pull request ``number``: the fake keeps the comment and
    delivers it to ``webhook_url``; the receiver's answer."""
    comment = fake.post_comment(repository, number, body, login)
    return deliver(
        webhook_url, "issue_comment", comment_delivery(fake, repository, number, comment), secret=secret
    )
