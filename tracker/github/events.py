"""The webhook deliveries the bot acts on, read from GitHub's payloads (pure: no database, no network).

A delivery is its ``X-GitHub-Event`` header and its payload. Which deliveries the bot acts on is
decided first, from the event, the action and the pull request's state (:func:`acted_on`: a comment
posted on a pull request; a pull request's push, label or close; the "Re-run" of one of the bot's
check runs, or its re-request); every other one is ignored whatever it holds. One the bot acts on
is validated against pydantic models of the parts of GitHub's payload it reads
(:mod:`tracker.github.payloads`; :class:`CommentPayload`, :class:`PullRequestPayload`,
:class:`CheckRunPayload`), strictly, since a
payload is untrusted even when signed (a misconfigured proxy, a GitHub schema change, a test tool):
one that does not validate raises :class:`MalformedDelivery` naming each field
(``issue.number: Input should be a valid integer``). The events are stored with the delivery
(:meth:`CommentEvent.to_dict`, :func:`event_from_dict`) and carried out later, so they hold only
plain values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
)

from tracker.errors import PerftrackError
from tracker.github.payloads import (
    SHA,
    CheckRun,
    Comment,
    Installation,
    Issue,
    Label,
    PullRequest,
    Repository,
    RequestedAction,
    User,
)
from wire import InModel

PULL_ACTIONS = ("synchronize", "labeled", "closed")
CHECK_RUN_ACTIONS = ("requested_action", "rerequested")


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


class CheckRunEvent(_StoredEvent):
    """The "Re-run" action of a comparison's check run pressed (``requested_action``), or the check
    run re-requested on GitHub (``rerequested``): measure the comparison again."""

    kind: Literal["check_run"] = "check_run"
    action: str
    check_run_id: int
    comparison_id: int
    head_sha: str
    sender: str


Event = Annotated[CommentEvent | PullRequestEvent | CheckRunEvent, Field(discriminator="kind")]
_STORED: TypeAdapter[CommentEvent | PullRequestEvent | CheckRunEvent] = TypeAdapter(Event)


def event_from_dict(stored: dict[str, Any]) -> Event:
    """An event as :meth:`CommentEvent.to_dict` / :meth:`PullRequestEvent.to_dict` stored it."""
    try:
        return _STORED.validate_python(stored)
    except ValidationError as error:
        raise MalformedDelivery(f"stored event: {_describe(error, skip=1)}") from None


# ---------------------------------------------------------------- GitHub's payloads


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
    if value is not None and SHA.fullmatch(value) and value.strip("0"):
        return value.lower()
    return None


class CheckRunPayload(_Payload):
    """``check_run`` ``requested_action`` or ``rerequested`` on one of the bot's check runs."""

    action: Literal["requested_action", "rerequested"]
    check_run: CheckRun
    sender: User
    requested_action: RequestedAction | None = None

    def event(self) -> CheckRunEvent:
        """The re-run asked for, as the bot stores it."""
        number, comparison_id = self.check_run.external_id.split(":")
        return CheckRunEvent(
            action=self.action,
            repository=self.repository.full_name,
            pr_number=int(number),
            pr_url="",
            installation_id=self.installation_id,
            check_run_id=self.check_run.id,
            comparison_id=int(comparison_id),
            head_sha=self.check_run.head_sha,
            sender=self.sender.login,
        )


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


class CheckRunDelivery(BaseModel):
    """A re-run of a comparison asked for on its check run."""

    event_name: Literal["check_run"]
    payload: CheckRunPayload

    def event(self) -> CheckRunEvent:
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
    elif name == "check_run" and action in CHECK_RUN_ACTIONS:
        check_run = payload.get("check_run")
        identifier = (payload.get("requested_action") or {}).get("identifier")
        ours = isinstance(check_run, dict) and ":" in str(check_run.get("external_id") or "")
        if ours and (action == "rerequested" or identifier == "rerun"):
            return "check_run"
    elif name == "pull_request" and action in PULL_ACTIONS:
        pull = payload.get("pull_request")
        if action == "closed" or not isinstance(pull, dict) or pull.get("state", "open") == "open":
            return "pull_request"
    return "ignored"


Delivery = Annotated[
    Annotated[CommentDelivery, Tag("comment")]
    | Annotated[PullRequestDelivery, Tag("pull_request")]
    | Annotated[CheckRunDelivery, Tag("check_run")]
    | Annotated[IgnoredDelivery, Tag("ignored")],
    Discriminator(acted_on),
]
_DELIVERY: TypeAdapter[CommentDelivery | PullRequestDelivery | CheckRunDelivery | IgnoredDelivery] = (
    TypeAdapter(Delivery)
)


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
