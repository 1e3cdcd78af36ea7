"""The parts of GitHub's webhook payloads the bot reads, as strict pydantic models (a payload is
untrusted even when signed; :mod:`tracker.github.events` builds the deliveries from them)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_PR_NUMBER = 2**31 - 1
SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


def _owner_name(value: str) -> str:
    if value.count("/") != 1:
        raise ValueError("must be owner/name")
    return value


def _commit_sha(value: str) -> str:
    if not SHA.fullmatch(value):
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


class CheckRunPull(_GithubObject):
    """A pull request a check run's head belongs to."""

    number: PullNumber


class CheckRun(_GithubObject):
    """The bot's check run of a comparison (``external_id``: ``<pr number>:<comparison id>``)."""

    id: PositiveId
    head_sha: CommitSha
    external_id: Annotated[str, Field(pattern=r"^[0-9]{1,10}:[0-9]{1,19}$")]
    pull_requests: list[CheckRunPull] = []


class RequestedAction(_GithubObject):
    """The button of the check run that was pressed."""

    identifier: Annotated[str, Field(max_length=20)]
