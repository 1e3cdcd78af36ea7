"""What git knows about a commit, for the tracker's commit records."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from runners.jobenv import job_environ
from runners.payload import CommitInfo

_FORMAT = "%H%x1f%P%x1f%cI%x1f%an%x1f%ae%x1f%s"


def commit_info(
    repository: Path, sha: str, *, timeout_s: float = 30.0, env: Mapping[str, str] | None = None
) -> CommitInfo | None:
    """Sha, parents, committer time, author and subject of ``sha``; ``None`` if git cannot tell.

    git runs in ``env`` (``None``: the agent's environment through the job allow-list).
    """
    try:
        completed = subprocess.run(
            ["git", "-C", str(repository), "log", "-1", f"--format={_FORMAT}", "--end-of-options", sha],
            env=job_environ() if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    fields = completed.stdout.rstrip("\n").split("\x1f")
    if completed.returncode != 0 or len(fields) != 6:
        return None
    full_sha, parents, committed_at, author, email, subject = fields
    return CommitInfo(
        sha=full_sha,
        committed_at=committed_at,
        title=subject[:512],
        author_name=author,
        author_email=email,
        parents=parents.split(),
    )
