"""The pull request a commit came from, as its merge title says (``Title (#123)`` for a squash merge,
``Merge pull request #123 from ...`` for a merge commit)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracker.models import Commit

_SQUASHED = re.compile(r"\(#(\d{1,9})\)\s*$")
_MERGED = re.compile(r"^Merge pull request #(\d{1,9}) ")
_GITHUB = re.compile(r"^(?:https://github\.com/|git@github\.com:)([\w.-]+/[\w.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class PullRequest:
    """A pull request's number, and its address when the repository is on GitHub."""

    number: int
    url: str | None


def pull_number_in(title: str) -> int | None:
    """The number of the pull request a commit title says it merged; None when it names none."""
    found = _SQUASHED.search(title) or _MERGED.match(title)
    return int(found.group(1)) if found is not None else None


def pull_request_of(commit: Commit) -> PullRequest | None:
    """The pull request ``commit`` merged, from its title; None when the title names none."""
    number = pull_number_in(commit.title)
    if number is None:
        return None
    on_github = _GITHUB.match(commit.repository.url.strip())
    url = f"https://github.com/{on_github.group(1)}/pull/{number}" if on_github else None
    return PullRequest(number=number, url=url)
