"""The bot's comments on an issue or pull request: posting one, and finding one again by the hidden
marker it carries (after a creation whose answer was lost). Used by :mod:`tracker.github.outbox`."""

from __future__ import annotations

from tracker.github.client import GithubClient


def create_comment(client: GithubClient, repository: str, number: str, body: str) -> int:
    """Post a comment on issue or pull request ``number``; its id."""
    created = client.request(
        "POST", f"/repos/{repository}/issues/{number}/comments", repository=repository, json={"body": body}
    )
    return int(created["id"])


def find_marked(client: GithubClient, repository: str, number: str, text: str) -> int | None:
    """The id of the PR comment that carries ``text`` (the bot's marker), looking through its pages."""
    for page in range(1, 11):
        comments = client.request(
            "GET",
            f"/repos/{repository}/issues/{number}/comments?per_page=100&page={page}",
            repository=repository,
        )
        if not comments:
            return None
        for comment in comments:
            if text in str(comment.get("body", "")):
                return int(comment["id"])
        if len(comments) < 100:
            return None
    return None
