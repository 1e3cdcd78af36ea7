"""The bare mirror of one repository: created on first use, fetched for every job."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from filelock import UnixFileLock

from runners.candidates._git import Git, tail
from runners.candidates.errors import CandidateBuildError
from runners.jobspec import RepositorySpec

_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Branches only: GitHub advertises tens of thousands of refs/pull/* refs, fetched one by one on demand.
_BRANCH_REFSPEC = "+refs/heads/*:refs/heads/*"


def workdir_lock(path: Path) -> UnixFileLock:
    """An exclusive ``flock`` on ``path`` (made with its folders when taken); ``with`` blocks until
    it holds it. The kernel drops it when the holding process dies: a crashed agent holds nothing.
    The hold is the object's, whichever thread releases it (not thread-local)."""
    return UnixFileLock(path, thread_local=False)


def safe_name(name: str) -> str:
    """A repository name usable as one path component (``sgl-project/sglang`` → ``sgl-project_sglang``)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".")
    if not cleaned:
        raise CandidateBuildError(f"repository name {name!r} gives no usable directory name")
    return cleaned


def split_pin(ref: str) -> tuple[str, str | None]:
    """``refs/pull/N/head@SHA`` → (``refs/pull/N/head``, ``SHA``): a branch pinned to one commit.

    The tracker pins a pull request to the head it had when a maintainer asked for the
    measurement, so a push during the rounds is never built. Anything else is returned unpinned.
    """
    branch, at, sha = ref.rpartition("@")
    if at and branch.startswith("refs/") and _FULL_SHA.fullmatch(sha):
        return branch, sha
    return ref, None


def check_ref(ref: str, what: str) -> None:
    """Refuse refs that git could read as an option or a refspec."""
    if not ref or ref.startswith("-") or ":" in ref or any(char.isspace() for char in ref):
        raise CandidateBuildError(f"{what} {ref!r} is not a commit sha or ref")


class Mirror:
    """``<workdir>/mirrors/<name>.git``, guarded by ``<name>.lock`` against a second agent."""

    def __init__(
        self,
        mirrors_dir: Path,
        repository: RepositorySpec,
        *,
        timeout_s: float,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.repository = repository
        name = safe_name(repository.name)
        self.path = mirrors_dir / f"{name}.git"
        self.lock = workdir_lock(mirrors_dir / f"{name}.lock")
        self.git = Git(self.path, timeout_s=timeout_s, base_env=base_env)

    def update(self, refs: list[str]) -> None:
        """Create the mirror if needed, fetch its branches, and fetch every ``refs/...`` in ``refs``."""
        self.path.mkdir(parents=True, exist_ok=True)
        if not (self.path / "HEAD").exists():
            self.git.run("init", "--quiet", "--bare")
        # Set every time: re-initialising is harmless, and the URL may have changed since last job.
        self.git.run("config", "remote.origin.url", self.repository.url)
        self.git.run("config", "--replace-all", "remote.origin.fetch", _BRANCH_REFSPEC)
        self.git.run("fetch", "--quiet", "--prune", "--no-tags", "origin")
        for ref in dict.fromkeys(ref for ref in refs if ref.startswith("refs/")):
            # Fetched every job, one by one: a pull request head moves, and a missing one is named.
            result = self.git.run("fetch", "--quiet", "--no-tags", "origin", f"+{ref}:{ref}", check=False)
            if result.returncode != 0:
                raise CandidateBuildError(
                    f"cannot fetch {ref} from {self.repository.url}: {tail(result.stderr, 3)}"
                )

    def resolve(self, ref: str, what: str) -> str:
        """The full sha of the commit ``ref`` names, fetching a full sha the mirror lacks."""
        check_ref(ref, what)
        sha = self._lookup(ref)
        if sha is None and _FULL_SHA.fullmatch(ref):
            # A commit on no fetched branch (a deleted branch, a fork): servers such as GitHub and
            # local repositories hand out reachable commits by sha.
            self.git.run("fetch", "--quiet", "--no-tags", "origin", ref, check=False)
            sha = self._lookup(ref)
        if sha is None:
            raise CandidateBuildError(f"unknown {what} {ref!r}: no such commit in {self.repository.url}")
        return sha

    def resolve_pinned(self, branch: str, sha: str, what: str) -> str:
        """``sha``, the pinned head of ``branch`` (fetched already), whatever the branch holds now.

        A branch that moved on may no longer contain it: the commit is then fetched by its sha.
        """
        found = self._lookup(sha)
        if found is None:
            self.git.run("fetch", "--quiet", "--no-tags", "origin", sha, check=False)
            found = self._lookup(sha)
        if found != sha:
            raise CandidateBuildError(
                f"{what} {branch}@{sha[:10]}: that commit is no longer in {self.repository.url} "
                "(the pull request was force-pushed and the old head collected)"
            )
        return sha

    def subject(self, sha: str) -> str:
        """The first line of a commit's message."""
        return self.git.out("log", "-1", "--format=%s", sha)

    def _lookup(self, ref: str) -> str | None:
        result = self.git.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False
        )
        return result.stdout.strip() if result.returncode == 0 else None
