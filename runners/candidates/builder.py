"""Check out a candidate (base commit, carried patches, patches) in a worktree of a local mirror."""

from __future__ import annotations

import contextlib
import secrets
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout, UnixFileLock

from runners.candidates._build import BuildCache, BuildCommand
from runners.candidates._git import Git
from runners.candidates._mirror import Mirror, check_ref, safe_name, split_pin, workdir_lock
from runners.candidates._patches import Patch, PatchIds, already_in, apply
from runners.candidates.errors import CandidateBuildError
from runners.jobenv import job_environ
from runners.jobspec import CandidateSpec, RepositorySpec

# The one worktree of a repository that has a build command (see _build's docstring for why).
_BUILD_SLOT = "build"


@dataclass(frozen=True)
class BuiltCandidate:
    """The tree a benchmark runs: where it is checked out and how it was made."""

    path: Path  # the worktree; removed when the build's with-block ends
    base_sha: str
    head_sha: str  # after the cherry-picks; equal to base_sha when nothing was applied
    tree_sha: str
    patches_applied: tuple[str, ...]  # refs as the job named them, carried ones first, in order
    patches_already_in: tuple[str, ...]  # carried refs the base already contained, in order
    applied_shas: tuple[str, ...]  # the commit each of patches_applied resolved to
    build_reused: bool = False  # the build command was skipped: the last build was of this tree here
    build_log: str = ""  # output of the build command (of the reused build when build_reused)


@dataclass(frozen=True)
class _Resolved:
    base_sha: str
    carried: tuple[Patch, ...]
    patches: tuple[Patch, ...]


class CandidateBuilder:
    """Builds candidates under one work directory: ``mirrors/<repo>.git`` and ``worktrees/<repo>/...``.

    One agent process uses one work directory. File locks keep a second agent that shares it by
    mistake from corrupting a mirror or pruning a worktree that is still in use. Git and the build
    commands run in ``base_env`` (``None``: the agent's environment through the job allow-list of
    :mod:`runners.jobenv`).
    """

    def __init__(
        self,
        workdir: Path,
        *,
        build_commands: Mapping[str, BuildCommand] | None = None,
        git_timeout_s: float = 600,
        build_timeout_s: float = 3600,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        # Absolute, because git resolves worktree paths relative to the mirror it runs in.
        self.workdir = workdir.resolve()
        self._mirrors_dir = self.workdir / "mirrors"
        self._worktrees_dir = self.workdir / "worktrees"
        self._build_commands = dict(build_commands or {})
        self._git_timeout_s = git_timeout_s
        self.base_env = job_environ() if base_env is None else dict(base_env)
        self._builds = BuildCache(timeout_s=build_timeout_s, env=self.base_env)
        self.prune()

    def prune(self) -> list[Path]:
        """Remove the worktrees no live build holds (a crashed agent's); return their paths."""
        removed: list[Path] = []
        if not self._worktrees_dir.is_dir():
            return removed
        for repo_dir in sorted(path for path in self._worktrees_dir.iterdir() if path.is_dir()):
            mirror_path = self._mirrors_dir / f"{repo_dir.name}.git"
            git = (
                Git(mirror_path, timeout_s=self._git_timeout_s, base_env=self.base_env)
                if mirror_path.is_dir()
                else None
            )
            with workdir_lock(self._mirrors_dir / f"{repo_dir.name}.lock"):
                for slot in sorted(path for path in repo_dir.iterdir() if path.is_dir()):
                    slot_lock = workdir_lock(_slot_lock_path(slot))
                    if not _try_lock(slot_lock):
                        continue  # a live build (maybe another agent's) holds it
                    try:
                        _remove_worktree(git, slot)
                    finally:
                        _release_and_remove(slot_lock)
                    removed.append(slot)
                for lock_path in sorted(repo_dir.glob("*.lock")):
                    # A lock without its worktree: an agent died between claiming a slot and adding it.
                    orphan = workdir_lock(lock_path)
                    if not lock_path.with_suffix("").exists() and _try_lock(orphan):
                        _release_and_remove(orphan)
                if git is not None:
                    git.run("worktree", "prune", check=False)
        return removed

    @contextlib.contextmanager
    def build(self, repository: RepositorySpec, candidate: CandidateSpec) -> Iterator[BuiltCandidate]:
        """Check out and build ``candidate`` in a fresh worktree, removed when the with-block ends."""
        mirror = Mirror(self._mirrors_dir, repository, timeout_s=self._git_timeout_s, base_env=self.base_env)
        with mirror.lock:
            resolved = _fetch_and_resolve(mirror, candidate)
        slot, slot_lock = self._claim_slot(repository, resolved.base_sha)
        try:
            with mirror.lock:
                _remove_worktree(mirror.git, slot)  # a crashed build's leftovers at a stable path
                mirror.git.run("worktree", "add", "--quiet", "--detach", str(slot), resolved.base_sha)
            try:
                yield self._assemble(mirror, repository, resolved, slot)
            finally:
                with mirror.lock:
                    _remove_worktree(mirror.git, slot)
        finally:
            _release_and_remove(slot_lock)

    def _claim_slot(self, repository: RepositorySpec, base_sha: str) -> tuple[Path, UnixFileLock]:
        repo_dir = self._worktrees_dir / safe_name(repository.name)
        if repository.name in self._build_commands:
            slot = repo_dir / _BUILD_SLOT
        else:
            slot = repo_dir / f"{base_sha[:12]}-{secrets.token_hex(4)}"
        slot_lock = workdir_lock(_slot_lock_path(slot))
        if not _try_lock(slot_lock):
            # The environment holds one editable install, so one candidate per built repository.
            raise CandidateBuildError(
                f"worktree {slot} is in use by another build of {repository.name}; "
                "a repository with a build command is built one candidate at a time"
            )
        return slot, slot_lock

    def _assemble(
        self, mirror: Mirror, repository: RepositorySpec, resolved: _Resolved, slot: Path
    ) -> BuiltCandidate:
        # The base's committer date on every commit made here keeps head_sha the same each time
        # the same candidate is built, on any host.
        committer_date = mirror.git.out("log", "-1", "--format=%cI", resolved.base_sha)
        git = Git(
            slot,
            timeout_s=self._git_timeout_s,
            env={"GIT_COMMITTER_DATE": committer_date},
            base_env=self.base_env,
        )
        patch_ids = PatchIds(git)
        applied: list[Patch] = []
        already: list[str] = []
        for patch in (*resolved.carried, *resolved.patches):
            if patch.carried and already_in(git, patch, patch_ids):
                already.append(patch.ref)
                continue
            apply(
                git,
                patch,
                base_sha=resolved.base_sha,
                default_branch=repository.default_branch,
                applied=[done.ref for done in applied],
            )
            applied.append(patch)
        tree_sha = git.out("rev-parse", "HEAD^{tree}")
        command = self._build_commands.get(repository.name)
        reused, log = False, ""
        if command is not None:
            reused, log = self._builds.ensure_built(repository.name, command, tree_sha=tree_sha, path=slot)
        return BuiltCandidate(
            path=slot,
            base_sha=resolved.base_sha,
            head_sha=git.out("rev-parse", "HEAD"),
            tree_sha=tree_sha,
            patches_applied=tuple(patch.ref for patch in applied),
            patches_already_in=tuple(already),
            applied_shas=tuple(patch.sha for patch in applied),
            build_reused=reused,
            build_log=log,
        )


def _fetch_and_resolve(mirror: Mirror, candidate: CandidateSpec) -> _Resolved:
    carried_refs = [patch.ref for patch in candidate.carried]
    # Checked before anything reaches git: a ref must not pass for an option or a refspec.
    check_ref(candidate.base_sha, "base")
    for ref in carried_refs:
        check_ref(ref, "carried patch")
    for ref in candidate.patches:
        check_ref(ref, "patch")
    fetched = [split_pin(ref)[0] for ref in (*carried_refs, *candidate.patches)]
    mirror.update([candidate.base_sha, *fetched])

    def resolve(ref: str, carried: bool) -> Patch:
        what = "carried patch" if carried else "patch"
        branch, pinned = split_pin(ref)
        sha = mirror.resolve(branch, what) if pinned is None else mirror.resolve_pinned(branch, pinned, what)
        return Patch(ref=ref, sha=sha, subject=mirror.subject(sha), carried=carried)

    return _Resolved(
        base_sha=mirror.resolve(candidate.base_sha, "base"),
        carried=tuple(resolve(ref, True) for ref in carried_refs),
        patches=tuple(resolve(ref, False) for ref in candidate.patches),
    )


def _slot_lock_path(slot: Path) -> Path:
    return slot.with_name(f"{slot.name}.lock")


def _try_lock(lock: UnixFileLock) -> bool:
    """Take ``lock`` if no one holds it; false at once if someone does."""
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    return True


def _release_and_remove(lock: UnixFileLock) -> None:
    """Delete the lock file (what it guarded is gone), then release it. A build waiting on the
    deleted file finds it unlinked once it holds it, and filelock takes a fresh file instead."""
    Path(lock.lock_file).unlink(missing_ok=True)
    lock.release()


def _remove_worktree(git: Git | None, slot: Path) -> None:
    """Remove a worktree and its registration; tolerate one that is half made or already gone."""
    if git is not None and slot.exists():
        git.run("worktree", "remove", "--force", str(slot), check=False)
    if slot.exists():
        shutil.rmtree(slot, ignore_errors=True)
    if git is not None:
        git.run("worktree", "prune", check=False)
