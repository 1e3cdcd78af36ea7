"""Where a branch points now (``git ls-remote``) and the first-parent commits since a known one.

The nightly schedule asks the remote for the branch head (no clone needed), then, when a mirror
is at hand, reads the head's metadata and the commits since the last nightly from it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable

from tracker.errors import ExternalServiceError
from tracker.models import Repository
from tracker.vcs.history import GitHistory, HistoryUnavailable
from wire import CommitIn

_SHA = re.compile(r"^[0-9a-f]{40}$")

BranchResolver = Callable[[str, str], str]
"""``(repository url, branch) -> full commit sha``; raises :class:`BranchUnavailable`."""


class BranchUnavailable(ExternalServiceError):
    """The branch head cannot be resolved (unreachable remote, unknown branch, git failed)."""


def ls_remote_head(url: str, branch: str, *, timeout_s: float = 60.0) -> str:
    """The sha ``refs/heads/<branch>`` points to on the remote, via ``git ls-remote``."""
    ref = f"refs/heads/{branch}"
    try:
        done = subprocess.run(
            ["git", "ls-remote", "--", url, ref],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BranchUnavailable(f"git ls-remote {url} failed: {error}") from error
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise BranchUnavailable(f"git ls-remote {url} failed: {message}")
    for line in done.stdout.splitlines():
        sha, _, name = line.partition("\t")
        if name == ref and _SHA.match(sha):
            return sha
    raise BranchUnavailable(f"branch {branch!r} not found in {url}")


def head_metadata(*, history: GitHistory, repository: Repository, sha: str) -> CommitIn | None:
    """Title, author, date and parents of ``sha`` from the mirror, or ``None`` when unavailable."""
    try:
        commits = history.first_parent_range(repository, f"{sha}~1", sha)
    except HistoryUnavailable:
        return None  # a root commit, or no mirror: the commit is stored with its sha alone
    return commits[-1] if commits else None


def first_parent_since(
    *, history: GitHistory, repository: Repository, since_sha: str, head_sha: str, limit: int
) -> list[CommitIn]:
    """Up to ``limit`` commits after ``since_sha`` and before ``head_sha`` (first parents), newest first.

    Raises :class:`HistoryUnavailable` when the range cannot be listed.
    """
    if limit <= 0:
        return []
    commits = history.first_parent_range(repository, since_sha, head_sha)
    between = [commit for commit in commits if not commit.sha.startswith(head_sha)]
    return list(reversed(between))[:limit]
