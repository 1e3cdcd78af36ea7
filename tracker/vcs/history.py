"""First-parent history between two commits, for bisection.

The tracker knows the commits it has runs for; bisection needs the ones in between. They come
from the commits already stored when their first parents chain up
(:func:`tracker.vcs.ranges.stored_first_parent_range`), else from here: a bare,
blob-less mirror of the repository (``git clone --bare --filter=blob:none``: commit metadata only,
so even sglang's history is a small download), fetched again only when a commit is missing.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tracker.errors import ExternalServiceError
from tracker.models import Repository
from wire import CommitIn

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_FIELD = "\x1f"
_RECORD = "\x1e"


class HistoryUnavailable(ExternalServiceError):
    """The commits between two commits cannot be listed (no mirror, unknown commit, git failed)."""


@dataclass(frozen=True)
class GitHistory:
    """Reads first-parent ranges from bare mirrors kept under ``cache_dir``."""

    cache_dir: Path
    timeout_s: float = 300.0

    def first_parent_range(self, repository: Repository, good_sha: str, bad_sha: str) -> list[CommitIn]:
        """Commits after ``good_sha`` up to and including ``bad_sha`` on the first-parent line, oldest first."""
        mirror = self._mirror(repository)
        for sha in (good_sha, bad_sha):
            if not self._has(mirror, sha):
                self._git(
                    mirror, "fetch", "--quiet", "--filter=blob:none", "origin", "+refs/heads/*:refs/heads/*"
                )
                if not self._has(mirror, sha):
                    raise HistoryUnavailable(f"commit {sha} is not in {repository.url}")
        fields = _FIELD.join(["%H", "%P", "%s", "%an", "%ae", "%cI"])
        out = self._git(
            mirror,
            "log",
            "--first-parent",
            "--reverse",
            f"--format={fields}{_RECORD}",
            "--end-of-options",
            f"{good_sha}..{bad_sha}",
        )
        commits = []
        for record in out.split(_RECORD):
            record = record.strip("\n")
            if not record:
                continue
            sha, parents, title, author, email, committed = record.split(_FIELD)
            commits.append(
                CommitIn(
                    sha=sha,
                    parents=parents.split(),
                    title=title,
                    author_name=author,
                    author_email=email,
                    committed_at=dt.datetime.fromisoformat(committed).astimezone(dt.UTC),
                )
            )
        if not commits or not commits[-1].sha.startswith(bad_sha):
            raise HistoryUnavailable(f"{bad_sha} does not descend from {good_sha} along first parents")
        return commits

    def _mirror(self, repository: Repository) -> Path:
        mirror = self.cache_dir / f"{_SAFE_NAME.sub('_', repository.name)}.git"
        if not (mirror / "HEAD").exists():
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            # "--": a URL starting with "-" stays a URL, never an option (``--upload-pack=CMD`` runs CMD).
            clone = [
                "git",
                "clone",
                "--quiet",
                "--bare",
                "--filter=blob:none",
                "--",
                repository.url,
                str(mirror),
            ]
            self._run(clone, what=f"clone {repository.url}")
        return mirror

    def _has(self, mirror: Path, sha: str) -> bool:
        probe = subprocess.run(
            ["git", "-C", str(mirror), "cat-file", "-e", "--end-of-options", f"{sha}^{{commit}}"],
            capture_output=True,
            timeout=self.timeout_s,
            check=False,
        )
        return probe.returncode == 0

    def _git(self, mirror: Path, *args: str) -> str:
        return self._run(["git", "-C", str(mirror), *args], what=f"git {args[0]}")

    def _run(self, argv: list[str], *, what: str) -> str:
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HistoryUnavailable(f"{what} failed: {error}") from error
        if done.returncode != 0:
            message = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise HistoryUnavailable(f"{what} failed: {message}")
        return done.stdout
