"""The objects GitHub's REST API answers with, in full, for the fake GitHub.

GitHub's published description (the tests keep a trimmed copy) requires dozens of fields on a
pull request or a repository; the fake answers every one of them, built here from the few the fake
keeps (a login, a repository's full name, a pull request's heads). A field the fake keeps wins over
the default built here, so what the tests set is what the bot reads, and the contract check
(tests/fakes/github_contract.py, in the test suite) holds it to the description all the same.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from perftrack.fakegithub.accounts import (
    API,
    TIME,
    WEB,
    full_repository,
    number_for,
    public_user,
    repository,
    user,
)

# What the App may do and hear, as its installation and ``GET /app`` both say.
APP_PERMISSIONS = {
    "checks": "write",
    "issues": "write",
    "pull_requests": "write",
    "statuses": "write",
    "metadata": "read",
}
APP_EVENTS = ("check_run", "issue_comment", "pull_request")


def _branch(side: dict[str, Any]) -> dict[str, Any]:
    """A pull request's ``head`` or ``base`` from what the fake keeps (ref, sha, repository)."""
    full_name = side["repo"]["full_name"]
    owner = full_name.partition("/")[0]
    return {
        "label": f"{owner}:{side['ref']}",
        "ref": side["ref"],
        "sha": side["sha"],
        "user": user(owner, kind="Organization"),
        **side,
        "repo": repository(full_name) | side["repo"],
    }


# Long on purpose: GitHub's pull-request object, every required field written out as one literal.
def pull_request(repository_name: str, kept: dict[str, Any]) -> dict[str, Any]:
    """A ``pull-request`` from what the fake keeps of it (number, state, head, base, ...)."""
    number = kept["number"]
    url = f"{API}/repos/{repository_name}/pulls/{number}"
    issue_url = f"{API}/repos/{repository_name}/issues/{number}"
    html_url = f"{WEB}/{repository_name}/pull/{number}"
    links = {
        "self": url,
        "html": html_url,
        "issue": issue_url,
        "comments": f"{issue_url}/comments",
        "review_comments": f"{url}/comments",
        "review_comment": f"{API}/repos/{repository_name}/pulls/comments{{/number}}",
        "commits": f"{url}/commits",
        "statuses": f"{API}/repos/{repository_name}/statuses/{kept['head']['sha']}",
    }
    return {
        "url": url,
        "id": number_for(f"{repository_name}#{number}"),
        "node_id": f"PR_{number_for(f'{repository_name}#{number}')}",
        "html_url": html_url,
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
        "issue_url": issue_url,
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": number,
        "state": "open",
        "locked": False,
        "title": f"Pull request {number}",
        "user": user("pr-author"),
        "body": None,
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": TIME,
        "updated_at": TIME,
        "closed_at": None,
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "_links": {name: {"href": href} for name, href in links.items()},
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": False,
        "merged": False,
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "clean",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 1,
        "deletions": 0,
        "changed_files": 1,
        **kept,
        "head": _branch(kept["head"]),
        "base": _branch(kept["base"]),
    }


def label(repository_name: str, name: str) -> dict[str, Any]:
    """A ``label`` of the repository, as a pull request (or a ``labeled`` event) names it."""
    return {
        "id": number_for(f"{repository_name}:{name}"),
        "node_id": f"LA_{number_for(f'{repository_name}:{name}')}",
        "url": f"{API}/repos/{repository_name}/labels/{quote(name)}",
        "name": name,
        "color": "ededed",
        "default": False,
        "description": None,
    }


def diff_entry(repository_name: str, kept: dict[str, Any]) -> dict[str, Any]:
    """A ``diff-entry`` (one file of a pull request) from what the fake keeps (filename, status)."""
    filename = kept["filename"]
    sha = f"{number_for(filename):040x}"
    path = quote(filename)  # GitHub's URLs carry the path percent-encoded
    additions, deletions = kept.get("additions", 1), kept.get("deletions", 0)
    return {
        "sha": sha,
        "filename": filename,
        "status": "modified",
        "additions": additions,
        "deletions": deletions,
        "changes": additions + deletions,
        "blob_url": f"{WEB}/{repository_name}/blob/{sha}/{path}",
        "raw_url": f"{WEB}/{repository_name}/raw/{sha}/{path}",
        "contents_url": f"{API}/repos/{repository_name}/contents/{path}?ref={sha}",
        **kept,
    }


def commit(repository_name: str, sha: str) -> dict[str, Any]:
    """A ``commit`` with no GitHub account behind its author (``author``/``committer`` null)."""
    url = f"{API}/repos/{repository_name}/commits/{sha}"
    person = {"name": "Perf Author", "email": "author@example.org", "date": TIME}
    return {
        "url": url,
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "html_url": f"{WEB}/{repository_name}/commit/{sha}",
        "comments_url": f"{url}/comments",
        "commit": {
            "url": f"{API}/repos/{repository_name}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": "A commit",
            "comment_count": 0,
            "tree": {"sha": "f" * 40, "url": f"{API}/repos/{repository_name}/git/trees/{'f' * 40}"},
        },
        "author": None,
        "committer": None,
        "parents": [],
    }


def comparison(repository_name: str, base: str, head: str, merge_base: str) -> dict[str, Any]:
    """A ``commit-comparison`` of ``base...head`` whose merge base is ``merge_base``."""
    html_url = f"{WEB}/{repository_name}/compare/{base}...{head}"
    return {
        "url": f"{API}/repos/{repository_name}/compare/{base}...{head}",
        "html_url": html_url,
        "permalink_url": html_url,
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
        "base_commit": commit(repository_name, merge_base),
        "merge_base_commit": commit(repository_name, merge_base),
        "status": "ahead",
        "ahead_by": 1,
        "behind_by": 0,
        "total_commits": 1,
        "commits": [commit(repository_name, head)],
        "files": [],
    }


def issue_comment(
    repository_name: str, comment_id: int, number: int, body: str, author: str
) -> dict[str, Any]:
    """An ``issue-comment`` on issue or pull request ``number``."""
    url = f"{API}/repos/{repository_name}/issues/comments/{comment_id}"
    return {
        "id": comment_id,
        "node_id": f"IC_{comment_id}",
        "url": url,
        "html_url": f"{WEB}/{repository_name}/pull/{number}#issuecomment-{comment_id}",
        "issue_url": f"{API}/repos/{repository_name}/issues/{number}",
        "body": body,
        "user": user(author),
        "created_at": TIME,
        "updated_at": TIME,
        "author_association": "NONE",
        "performed_via_github_app": None,
    }


def reaction(reaction_id: int, content: str, author: str) -> dict[str, Any]:
    """A ``reaction`` by ``author``."""
    return {
        "id": reaction_id,
        "node_id": f"REA_{reaction_id}",
        "user": user(author),
        "content": content,
        "created_at": TIME,
    }


def status(
    repository_name: str, status_id: int, sha: str, sent: dict[str, Any], author: str
) -> dict[str, Any]:
    """A commit ``status`` as GitHub answers a ``POST .../statuses/{sha}`` with ``sent``."""
    return {
        "url": f"{API}/repos/{repository_name}/statuses/{sha}",
        "avatar_url": None,
        "id": status_id,
        "node_id": f"SC_{status_id}",
        "state": sent["state"],
        "description": sent.get("description"),
        "target_url": sent.get("target_url"),
        "context": sent.get("context", "default"),
        "created_at": TIME,
        "updated_at": TIME,
        "creator": user(author),
    }


def check_run(repository_name: str, kept: dict[str, Any], app_slug: str) -> dict[str, Any]:
    """A ``check-run`` as GitHub answers its creation or an edit; ``kept`` holds what was sent."""
    run_id = kept["id"]
    output = kept.get("output") or {}
    return {
        "id": run_id,
        "head_sha": kept["head_sha"],
        "node_id": f"CR_{run_id}",
        "external_id": kept.get("external_id", ""),
        "url": f"{API}/repos/{repository_name}/check-runs/{run_id}",
        "html_url": f"{WEB}/{repository_name}/runs/{run_id}",
        "details_url": kept.get("details_url"),
        "status": kept["status"],
        "conclusion": kept.get("conclusion"),
        "started_at": kept.get("started_at", TIME),
        "completed_at": kept.get("completed_at"),
        "output": {
            "title": output.get("title"),
            "summary": output.get("summary"),
            "text": output.get("text"),
            "annotations_count": 0,
            "annotations_url": f"{API}/repos/{repository_name}/check-runs/{run_id}/annotations",
        },
        "name": kept["name"],
        "check_suite": {"id": number_for(kept["head_sha"])},
        "app": app(app_slug),
        "pull_requests": [],
    }


def collaborator_permission(login: str, level: str) -> dict[str, Any]:
    """A ``repository-collaborator-permission``: ``level`` is GitHub's role name (``maintain``,
    ``triage`` included); ``permission`` is its legacy admin/write/read/none."""
    legacy = {"maintain": "write", "triage": "read"}.get(level, level)
    return {"permission": legacy, "role_name": level, "user": {**user(login), "role_name": level}}


def installation(installation_id: int, owner: str, app_slug: str) -> dict[str, Any]:
    """An ``installation`` of the App ``app_slug`` on ``owner``'s repositories."""
    return {
        "id": installation_id,
        "account": user(owner, kind="Organization"),
        "repository_selection": "all",
        "access_tokens_url": f"{API}/app/installations/{installation_id}/access_tokens",
        "repositories_url": f"{API}/installation/repositories",
        "html_url": f"{WEB}/organizations/{owner}/settings/installations/{installation_id}",
        "app_id": 1,
        "app_slug": app_slug,
        "target_id": number_for(owner),
        "target_type": "Organization",
        "permissions": dict(APP_PERMISSIONS),
        "events": list(APP_EVENTS),
        "created_at": TIME,
        "updated_at": TIME,
        "single_file_name": None,
        "suspended_by": None,
        "suspended_at": None,
    }


def app(slug: str) -> dict[str, Any]:
    """An ``integration``: the App itself, as ``GET /app`` answers."""
    return {
        "id": 1,
        "slug": slug,
        "node_id": f"A_{number_for(slug)}",
        "owner": user("sgl-project", kind="Organization"),
        "name": slug,
        "description": None,
        "external_url": "https://perftrack.example.org",
        "html_url": f"{WEB}/apps/{slug}",
        "created_at": TIME,
        "updated_at": TIME,
        "permissions": dict(APP_PERMISSIONS),
        "events": list(APP_EVENTS),
    }


def error(message: str) -> dict[str, Any]:
    """GitHub's error body: a ``basic-error``, or a ``validation-error`` (a 422), which needs the
    ``documentation_url`` too."""
    return {"message": message, "documentation_url": "https://docs.github.com/rest"}


__all__ = [
    "API",
    "TIME",
    "WEB",
    "app",
    "check_run",
    "collaborator_permission",
    "commit",
    "comparison",
    "diff_entry",
    "error",
    "full_repository",
    "installation",
    "issue_comment",
    "label",
    "number_for",
    "public_user",
    "pull_request",
    "reaction",
    "repository",
    "status",
    "user",
]
