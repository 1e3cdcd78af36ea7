"""The webhook deliveries the bot acts on, read from GitHub's payloads (pure: no database, no network).

A delivery is its ``X-GitHub-Event`` header and its payload. Which deliveries the bot acts on is
decided first, from the event, the action and the pull request's state (:func:`acted_on`: a comment
posted on a pull request; a pull request's push, label or close); every other one is ignored
whatever it holds. One the bot acts on is validated against pydantic models of the parts of
GitHub's payload it reads (:class:`CommentPayload`, :class:`PullRequestPayload`), strictly, since a
payload is untrusted even when signed (a misconfigured proxy, a GitHub schema change, a test tool):
one that does not validate raises :class:`MalformedDelivery` naming each field
(``issue.number: Input should be a valid integer``). The events are stored with the delivery
(:meth:`CommentEvent.to_dict`, :func:`event_from_dict`) and carried out later, so they hold only
plain values.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
)

from tracker.errors import PerftrackError
from wire import InModel

MAX_PR_NUMBER = 2**31 - 1
PULL_ACTIONS = ("synchronize", "labeled", "closed")
_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


class MalformedDelivery(PerftrackError):
    """A signed delivery the bot would act on, without a field it needs (or of the wrong type)."""


# ---------------------------------------------------------------- what the bot stores and acts on


class _StoredEvent(BaseModel):
    """What every event names: the pull request, and the installation that sent it."""

    model_config = ConfigDict(frozen=True)

    repository: str
    pr_number: int
    pr_url: str
    installation_id: int | None

    def to_dict(self) -> dict[str, Any]:
        """The event as stored with its delivery."""
        return self.model_dump(mode="json")


class CommentEvent(_StoredEvent):
    """A new comment on a pull request."""

    kind: Literal["comment"] = "comment"
    comment_id: int | None
    author: str
    author_is_bot: bool
    body: str
    pr_open: bool = True
    via_app_id: int | None = None  # the GitHub App that posted it on someone's behalf, if any


class PullRequestEvent(_StoredEvent):
    """A pull request that moved: ``synchronize`` (a push), ``labeled``, ``closed``."""

    kind: Literal["pull_request"] = "pull_request"
    action: str
    head_sha: str
    sender: str
    labels: tuple[str, ...]
    label: str | None  # the label just added, for ``labeled``
    from_fork: bool = False  # the head lives in another repository (or one that was deleted)
    before_sha: str | None = None  # for ``synchronize``: the head before the push


Event = Annotated[CommentEvent | PullRequestEvent, Field(discriminator="kind")]
_STORED: TypeAdapter[CommentEvent | PullRequestEvent] = TypeAdapter(Event)


def event_from_dict(stored: dict[str, Any]) -> Event:
    """An event as :meth:`CommentEvent.to_dict` / :meth:`PullRequestEvent.to_dict` stored it."""
    try:
        return _STORED.validate_python(stored)
    except ValidationError as error:
        raise MalformedDelivery(f"stored event: {_describe(error, skip=1)}") from None


# ---------------------------------------------------------------- GitHub's payloads


def _owner_name(value: str) -> str:
    if value.count("/") != 1:
        raise ValueError("must be owner/name")
    return value


def _commit_sha(value: str) -> str:
    if not _SHA.fullmatch(value):
        raise ValueError("must be a commit sha: 40 or 64 hexadecimal digits")
    return value.lower()


PositiveId = Annotated[int, Field(ge=1, le=2**63 - 1)]
PullNumber = Annotated[int, Field(ge=1, le=MAX_PR_NUMBER)]
Login = Annotated[str, Field(min_length=1, max_length=100)]
RepositoryName = Annotated[str, Field(max_length=200), AfterValidator(_owner_name)]
CommitSha = Annotated[str, AfterValidator(_commit_sha)]


class _GithubObject(BaseModel):
    """A part of a payload: strict (``"43650"`` is no number, ``1`` no text), other fields ignored."""

    model_config = ConfigDict(strict=True, frozen=True)


class User(_GithubObject):
    """A comment's author, a pull request's sender."""

    login: Login
    type: str | None = None  # "Bot" for bots


class Repository(_GithubObject):
    """The repository a delivery is about."""

    full_name: RepositoryName


class Installation(_GithubObject):
    """The GitHub App installation that sent the delivery (none in token mode)."""

    id: PositiveId | None = None


class App(_GithubObject):
    """The GitHub App that posted a comment on someone's behalf."""

    id: PositiveId


class PullLink(_GithubObject):
    """What makes an issue a pull request."""

    html_url: str | None = None


class Issue(_GithubObject):
    """The pull request a comment is on, as an issue."""

    number: PullNumber
    html_url: str | None = None
    state: str = "open"
    pull_request: PullLink


class Comment(_GithubObject):
    """A comment as posted."""

    id: PositiveId
    user: User
    body: str | None = None
    performed_via_github_app: App | None = None


class Label(_GithubObject):
    """A pull request's label."""

    name: str


class BranchRepository(_GithubObject):
    """The repository a pull request's branch lives in."""

    full_name: str


class Base(_GithubObject):
    """The branch a pull request merges into."""

    repo: BranchRepository | None = None


class Head(Base):
    """The branch a pull request merges (``repo`` is null once a fork is deleted)."""

    sha: CommitSha


class PullRequest(_GithubObject):
    """A pull request, as a ``pull_request`` delivery describes it."""

    number: PullNumber
    html_url: str | None = None
    head: Head
    base: Base
    labels: list[Label] = []

    @property
    def from_fork(self) -> bool:
        """Whether the head lives in another repository than the base (or one that was deleted)."""
        if self.head.repo is None or self.base.repo is None:
            return True
        return self.head.repo.full_name.lower() != self.base.repo.full_name.lower()


class _Payload(InModel):
    """A payload the bot acts on: too deep refused, U+0000 replaced (JSONB cannot store it)."""

    model_config = ConfigDict(strict=True, frozen=True)

    repository: Repository
    installation: Installation | None = None

    @property
    def installation_id(self) -> int | None:
        """The installation that sent it, if any."""
        return self.installation.id if self.installation is not None else None


class CommentPayload(_Payload):
    """``issue_comment`` ``created`` on a pull request."""

    action: Literal["created"]
    issue: Issue
    comment: Comment

    def event(self) -> CommentEvent:
        """The comment, as the bot stores it."""
        issue, comment = self.issue, self.comment
        app = comment.performed_via_github_app
        return CommentEvent(
            repository=self.repository.full_name,
            pr_number=issue.number,
            pr_url=issue.html_url or issue.pull_request.html_url or "",
            comment_id=comment.id,
            author=comment.user.login,
            author_is_bot=comment.user.type == "Bot",
            body=comment.body or "",
            installation_id=self.installation_id,
            pr_open=issue.state == "open",
            via_app_id=app.id if app is not None else None,
        )


class PullRequestPayload(_Payload):
    """``pull_request`` ``synchronize``, ``labeled`` or ``closed``."""

    action: Literal["synchronize", "labeled", "closed"]
    pull_request: PullRequest
    sender: User | None = None
    label: Label | None = None
    before: str | None = None  # for ``synchronize``

    def event(self) -> PullRequestEvent:
        """The move, as the bot stores it."""
        pull = self.pull_request
        return PullRequestEvent(
            action=self.action,
            repository=self.repository.full_name,
            pr_number=pull.number,
            pr_url=pull.html_url or "",
            head_sha=pull.head.sha,
            sender=self.sender.login if self.sender is not None else "",
            labels=tuple(label.name for label in pull.labels),
            label=self.label.name if self.label is not None else None,
            installation_id=self.installation_id,
            from_fork=pull.from_fork,
            before_sha=_sha_or_none(self.before) if self.action == "synchronize" else None,
        )


def _sha_or_none(value: str | None) -> str | None:
    """A commit sha as GitHub writes it (40 or 64 hex digits, not all zeros), else ``None``."""
    if value is not None and _SHA.fullmatch(value) and value.strip("0"):
        return value.lower()
    return None


# ---------------------------------------------------------------- deliveries


class CommentDelivery(BaseModel):
    """A comment posted on a pull request: the bot looks for a ``/perf`` command in it."""

    event_name: Literal["issue_comment"]
    payload: CommentPayload

    def event(self) -> CommentEvent:
        """What the bot acts on."""
        return self.payload.event()


class PullRequestDelivery(BaseModel):
    """A pull request's push, label or close: the bot re-runs, starts or cancels its comparison."""

    event_name: Literal["pull_request"]
    payload: PullRequestPayload

    def event(self) -> PullRequestEvent:
        """What the bot acts on."""
        return self.payload.event()


class IgnoredDelivery(BaseModel):
    """Any other delivery (``ping``, an edited comment, a closed pull request's push): not read."""

    event_name: str
    payload: Any

    def event(self) -> None:
        """Nothing to act on."""


def acted_on(delivery: Any) -> str:
    """Which delivery ``{"event_name": ..., "payload": ...}`` is for the bot (its tag below).

    A command runs once, when posted: an edited or deleted comment is not read. A push or label on
    a closed pull request starts nothing; closing one cancels its comparison.
    """
    name, payload = delivery["event_name"], delivery["payload"]
    action = payload.get("action")
    if name == "issue_comment":
        issue = payload.get("issue")
        if action == "created" and isinstance(issue, dict) and issue.get("pull_request"):
            return "comment"
    elif name == "pull_request" and action in PULL_ACTIONS:
        pull = payload.get("pull_request")
        if action == "closed" or not isinstance(pull, dict) or pull.get("state", "open") == "open":
            return "pull_request"
    return "ignored"


Delivery = Annotated[
    Annotated[CommentDelivery, Tag("comment")]
    | Annotated[PullRequestDelivery, Tag("pull_request")]
    | Annotated[IgnoredDelivery, Tag("ignored")],
    Discriminator(acted_on),
]
_DELIVERY: TypeAdapter[CommentDelivery | PullRequestDelivery | IgnoredDelivery] = TypeAdapter(Delivery)


def read_event(event_name: str, payload: dict[str, Any]) -> Event | None:
    """The event a delivery is for the bot, ``None`` when the bot does not act on it
    (:class:`MalformedDelivery` when it would but the payload does not validate)."""
    try:
        delivery = _DELIVERY.validate_python({"event_name": event_name, "payload": payload})
    except ValidationError as error:
        raise MalformedDelivery(_describe(error, skip=2)) from None
    return delivery.event()


def _describe(error: ValidationError, *, skip: int) -> str:
    """One clause per problem, naming its field (``issue.number: ...``) without the first ``skip``
    parts of its location (the union's tag; a delivery's ``payload``)."""
    clauses = []
    for problem in error.errors(include_url=False):
        field = ""
        for part in problem["loc"][skip:]:
            field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
        message = problem["msg"].removeprefix("Value error, ")
        clauses.append(f"{field}: {message}" if field else message)
    return "; ".join(clauses)
