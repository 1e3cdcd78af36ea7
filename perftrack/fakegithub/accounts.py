"""GitHub's account and repository objects, in full, for the fake GitHub: the users, the repository
and its URL fields that nearly every other answer embeds (:mod:`perftrack.fakegithub.shapes` builds
the rest from these)."""

from __future__ import annotations

import zlib
from typing import Any
from urllib.parse import quote

API = "https://api.github.com"
WEB = "https://github.com"
TIME = "2026-06-01T12:00:00Z"

# The URL fields of a repository, as ``<field>_url``: the path below the repository's API URL.
_REPOSITORY_URLS = {
    "archive": "{archive_format}{/ref}",
    "assignees": "assignees{/user}",
    "blobs": "git/blobs{/sha}",
    "branches": "branches{/branch}",
    "collaborators": "collaborators{/collaborator}",
    "comments": "comments{/number}",
    "commits": "commits{/sha}",
    "compare": "compare/{base}...{head}",
    "contents": "contents/{+path}",
    "contributors": "contributors",
    "deployments": "deployments",
    "downloads": "downloads",
    "events": "events",
    "forks": "forks",
    "git_commits": "git/commits{/sha}",
    "git_refs": "git/refs{/sha}",
    "git_tags": "git/tags{/sha}",
    "hooks": "hooks",
    "issue_comment": "issues/comments{/number}",
    "issue_events": "issues/events{/number}",
    "issues": "issues{/number}",
    "keys": "keys{/key_id}",
    "labels": "labels{/name}",
    "languages": "languages",
    "merges": "merges",
    "milestones": "milestones{/number}",
    "notifications": "notifications{?since,all,participating}",
    "pulls": "pulls{/number}",
    "releases": "releases{/id}",
    "stargazers": "stargazers",
    "statuses": "statuses/{sha}",
    "subscribers": "subscribers",
    "subscription": "subscription",
    "tags": "tags",
    "teams": "teams",
    "trees": "git/trees{/sha}",
}


def number_for(text: str) -> int:
    """A stable positive id for a name (GitHub's ids are numbers; the fake keys things by name)."""
    return zlib.crc32(text.encode()) % 10**9 + 1


def user(login: str, *, kind: str | None = None) -> dict[str, Any]:
    """A ``simple-user``: an account as GitHub names it everywhere (``[bot]`` logins are Bots)."""
    kind = kind or ("Bot" if login.endswith("[bot]") else "User")
    url = f"{API}/users/{quote(login)}"  # GitHub's own: .../users/perftrack%5Bbot%5D
    return {
        "login": login,
        "id": number_for(login),
        "node_id": f"U_{number_for(login)}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number_for(login)}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{WEB}/{quote(login)}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": kind,
        "site_admin": False,
    }


def public_user(login: str) -> dict[str, Any]:
    """A ``public-user``: what ``GET /user`` answers for a token's account."""
    return {
        **user(login),
        "name": None,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": TIME,
        "updated_at": TIME,
    }


def full_repository(full_name: str) -> dict[str, Any]:
    """A ``full-repository``: what ``GET /repos/{owner}/{repo}`` answers."""
    return {**repository(full_name), "network_count": 0, "subscribers_count": 0}


def repository(full_name: str) -> dict[str, Any]:
    """A ``repository``: what a pull request's heads name."""
    owner, _, name = full_name.partition("/")
    url = f"{API}/repos/{full_name}"
    return {
        "id": number_for(full_name),
        "node_id": f"R_{number_for(full_name)}",
        "name": name,
        "full_name": full_name,
        "owner": user(owner, kind="Organization"),
        "private": False,
        "html_url": f"{WEB}/{full_name}",
        "description": None,
        "fork": False,
        "url": url,
        **{f"{field}_url": f"{url}/{path}" for field, path in _REPOSITORY_URLS.items()},
        "git_url": f"git://github.com/{full_name}.git",
        "ssh_url": f"git@github.com:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git",
        "svn_url": f"{WEB}/{full_name}",
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "forks": 0,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers": 0,
        "watchers_count": 0,
        "size": 1,
        "default_branch": "main",
        "open_issues": 0,
        "open_issues_count": 0,
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "license": None,
        "pushed_at": TIME,
        "created_at": TIME,
        "updated_at": TIME,
    }
