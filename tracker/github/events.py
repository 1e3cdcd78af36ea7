"""The webhook deliveries the bot acts on, read from GitHub's payloads (pure: no database, no network).

A payload is untrusted even when signed (a misconfigured proxy, a GitHub schema change, a test
tool): every field is checked for presence and type, and a delivery the bot would act on but
cannot read raises :class:`MalformedDelivery` naming the field. The events are stored with the
delivery (``to_dict`` / ``from_dict``) and carried out later, so they hold only plain values.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from tracker.errors import PerftrackError

MAX_PR_NUMBER = 2**31 - 1
_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


class MalformedDelivery(PerftrackError):
    """A signed delivery the bot would act on, without a field it needs (or of the wrong type)."""


@dataclass(frozen=True)
class CommentEvent:
    """A new comment on a pull request (or a push or label treated as a command: ``comment_id`` None)."""

    repository: str
    pr_number: int
    pr_url: str
    comment_id: int | None
    author: str
    author_is_bot: bool
    body: str
    installation_id: int | None
    pr_open: bool = True
    via_app_id: int | None = None  # the GitHub App that posted it on someone's behalf, if any

    def to_dict(self) -> dict[str, Any]:
        """The event as stored with its delivery."""
        return {"kind": "comment", **asdict(self)}


@dataclass(frozen=True)
class PullRequestEvent:
    """A pull request that moved: ``synchronize`` (a push), ``labeled``, ``closed``, ``reopened``."""

    action: str
    repository: str
    pr_number: int
    pr_url: str
    head_sha: str
    sender: str
    labels: tuple[str, ...]
    label: str | None  # the label just added, for ``labeled``
    installation_id: int | None
    from_fork: bool = False  # the head lives in another repository (or one that was deleted)
    before_sha: str | None = None  # for ``synchronize``: the head before the push

    def to_dict(self) -> dict[str, Any]:
        """The event as stored with its delivery."""
        return {"kind": "pull_request", **asdict(self)}


Event = CommentEvent | PullRequestEvent
PULL_ACTIONS = ("synchronize", "labeled", "closed")


def event_from_dict(stored: dict[str, Any]) -> Event:
    """An event as :meth:`CommentEvent.to_dict` / :meth:`PullRequestEvent.to_dict` stored it."""
    kind = stored.get("kind")
    cls: type[CommentEvent] | type[PullRequestEvent] = CommentEvent if kind == "comment" else PullRequestEvent
    if kind not in ("comment", "pull_request"):
        raise MalformedDelivery(f"stored event of unknown kind {kind!r}")
    values = {field.name: stored[field.name] for field in fields(cls) if field.name in stored}
    if cls is PullRequestEvent:
        values["labels"] = tuple(values.get("labels") or ())
    return cls(**values)


def read_event(event_name: str, payload: dict[str, Any]) -> Event | None:
    """The event a delivery is for the bot, ``None`` when the bot does not act on it.

    ``issue_comment`` ``created`` on a pull request; ``pull_request`` ``synchronize``, ``labeled``
    and ``closed``. An edited or deleted comment is not read: a command runs once, when posted.
    """
    if event_name == "issue_comment":
        return _comment(payload)
    if event_name == "pull_request":
        return _pull_request(payload)
    return None


def _comment(payload: dict[str, Any]) -> CommentEvent | None:
    issue = payload.get("issue")
    if payload.get("action") != "created" or not isinstance(issue, dict) or not issue.get("pull_request"):
        return None
    comment = _object(payload, "comment")
    user = _object(comment, "user", "comment.")
    app = comment.get("performed_via_github_app")
    pull = issue.get("pull_request")
    fallback_url = pull.get("html_url") if isinstance(pull, dict) else None
    return CommentEvent(
        repository=_repository(payload),
        pr_number=_number(issue, "number", "issue."),
        pr_url=_text(issue.get("html_url") or fallback_url or ""),
        comment_id=_number(comment, "id", "comment."),
        author=_login(user, "comment.user.login"),
        author_is_bot=user.get("type") == "Bot",
        body=_text(comment.get("body") or ""),
        installation_id=_installation(payload),
        pr_open=issue.get("state", "open") == "open",
        via_app_id=_number(app, "id", "comment.performed_via_github_app.") if isinstance(app, dict) else None,
    )


def _pull_request(payload: dict[str, Any]) -> PullRequestEvent | None:
    action = payload.get("action")
    if action not in PULL_ACTIONS:
        return None
    pull = _object(payload, "pull_request")
    if action != "closed" and pull.get("state", "open") != "open":
        return None
    head = _object(pull, "head", "pull_request.")
    base = _object(pull, "base", "pull_request.")
    head_repo, base_repo = head.get("repo"), base.get("repo")
    head_name = head_repo.get("full_name") if isinstance(head_repo, dict) else None
    base_name = base_repo.get("full_name") if isinstance(base_repo, dict) else None
    repository = _repository(payload)
    sha = head.get("sha")
    if not isinstance(sha, str) or not sha or len(sha) > 64:
        raise MalformedDelivery("pull_request.head.sha is missing or not a commit sha")
    sender = payload.get("sender")
    label = payload.get("label")
    labels = pull.get("labels")
    return PullRequestEvent(
        action=str(action),
        repository=repository,
        pr_number=_number(pull, "number", "pull_request."),
        pr_url=_text(pull.get("html_url") or ""),
        head_sha=sha.lower(),
        sender=_login(sender, "sender.login") if isinstance(sender, dict) else "",
        labels=tuple(
            str(entry["name"])
            for entry in (labels if isinstance(labels, list) else [])
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        ),
        label=str(label["name"]) if isinstance(label, dict) and isinstance(label.get("name"), str) else None,
        installation_id=_installation(payload),
        from_fork=not (isinstance(head_name, str) and isinstance(base_name, str))
        or head_name.lower() != base_name.lower(),
        before_sha=_sha_or_none(payload.get("before")) if action == "synchronize" else None,
    )


def _sha_or_none(value: Any) -> str | None:
    """A commit sha as GitHub writes it (40 or 64 hex digits), else ``None``."""
    if isinstance(value, str) and _SHA.fullmatch(value) and value.strip("0"):
        return value.lower()
    return None


def _object(parent: dict[str, Any], key: str, where: str = "") -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise MalformedDelivery(f"{where}{key} is missing or not an object")
    return value


def _number(parent: dict[str, Any], key: str, where: str) -> int:
    value = parent.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**63 - 1:
        raise MalformedDelivery(f"{where}{key} is missing or not a positive whole number")
    if key == "number" and value > MAX_PR_NUMBER:
        raise MalformedDelivery(f"{where}{key} is out of range")
    return value


def _login(user: dict[str, Any], where: str) -> str:
    login = user.get("login")
    if not isinstance(login, str) or not login or len(login) > 100:
        raise MalformedDelivery(f"{where} is missing or not a GitHub login")
    return login


def _repository(payload: dict[str, Any]) -> str:
    repository = _object(payload, "repository")
    name = repository.get("full_name")
    if not isinstance(name, str) or name.count("/") != 1 or len(name) > 200:
        raise MalformedDelivery("repository.full_name is missing or not owner/name")
    return name


def _installation(payload: dict[str, Any]) -> int | None:
    installation = payload.get("installation")
    if not isinstance(installation, dict) or installation.get("id") is None:
        return None
    return _number(installation, "id", "installation.")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise MalformedDelivery(f"expected text, got {type(value).__name__}")
    return value
