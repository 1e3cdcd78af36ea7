"""Who may make perftrack run a pull request's code: write access to the repository, or a place
on the allow list. Asked of GitHub for each command and each new head, never remembered."""

from __future__ import annotations

from tracker.github.client import GithubClient, GithubError, GithubSetupError
from tracker.settings import Settings

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


def may_run(*, settings: Settings, client: GithubClient, repository: str, login: str) -> bool:
    """Whether ``login`` may start measurements on ``repository`` (owner/name).

    GitHub answers 404 for "not a collaborator", but also when perftrack's own credentials cannot
    see the repository: that second case is a set-up problem (:class:`GithubSetupError`), not a
    refusal of the user.
    """
    allowed = {name.lower() for name in settings.github_allowed_users}
    if login.lower() in allowed:
        return True
    try:
        answer = client.request(
            "GET", f"/repos/{repository}/collaborators/{login}/permission", repository=repository
        )
    except GithubError as error:
        if error.status != 404 or isinstance(error, GithubSetupError):
            raise
        _check_visible(client, repository)
        return False
    names = {str(answer.get("permission", "")), str(answer.get("role_name", ""))}
    return bool(names & WRITE_PERMISSIONS)


def _check_visible(client: GithubClient, repository: str) -> None:
    try:
        client.request("GET", f"/repos/{repository}", repository=repository)
    except GithubError as error:
        if error.status == 404:
            raise GithubSetupError(
                f"perftrack's GitHub credentials cannot see {repository}: give the App or token access",
                status=404,
            ) from None
        raise
