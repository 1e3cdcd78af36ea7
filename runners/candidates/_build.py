"""The per-repository build command (``pip install -e python`` for sglang) and its reuse.

An editable install points the environment at a path, so a build is only valid for the tree *and*
the path it was made from, and the environment holds one install at a time. Hence the cache keeps,
per repository, only the last successful build, keyed by (command, tree sha, worktree path); the
builder gives repositories with a build command one stable worktree path, so an unchanged tree
rebuilt there finds the install still pointing at identical files. The cache lives in memory: a
restarted agent rebuilds once rather than trust an environment another process may have changed.

The worktree itself is removed after each job, so only what the build puts into the environment
survives for reuse; a build command that leaves products inside the worktree (an extension compiled
in place) must not rely on reuse, since a reused tree is a fresh checkout of the same files.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runners.candidates._git import tail
from runners.candidates._process import run_process
from runners.candidates.errors import CandidateBuildError
from runners.jobenv import job_environ

BuildCommand = str | Sequence[str]

# Lines of build output quoted in the error when a build fails.
_TAIL_LINES = 40


def command_argv(command: BuildCommand) -> tuple[str, ...]:
    """The argument list of a build command; a string is split like a shell would, but no shell runs."""
    argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
    if not argv:
        raise CandidateBuildError("empty build command")
    return argv


@dataclass(frozen=True)
class _BuildKey:
    command: tuple[str, ...]
    tree_sha: str
    path: Path


class BuildCache:
    """Runs build commands, skipping one whose last success was for the same tree at the same path.

    A build runs in ``env`` (``None``: the agent's environment through the job allow-list of
    :mod:`runners.jobenv`), never in the agent's own: the code it builds may be a pull request's.
    """

    def __init__(self, *, timeout_s: float, env: Mapping[str, str] | None = None) -> None:
        self.timeout_s = timeout_s
        self.env = job_environ() if env is None else dict(env)
        self._last: dict[str, tuple[_BuildKey, str]] = {}  # repository name -> (key, build log)

    def ensure_built(
        self, repository: str, command: BuildCommand, *, tree_sha: str, path: Path
    ) -> tuple[bool, str]:
        """Build ``path`` unless its tree was the last built there; return (reused, build log)."""
        key = _BuildKey(command_argv(command), tree_sha, path)
        last = self._last.get(repository)
        if last is not None and last[0] == key:
            return True, last[1]
        # From here until success the environment holds no known build (a failed pip install can
        # leave it half-replaced), so forget the previous one first.
        self._last.pop(repository, None)
        shown = shlex.join(key.command)
        try:
            result = run_process(
                key.command, cwd=path, timeout_s=self.timeout_s, env=self.env, merge_stderr=True
            )
        except OSError as error:
            raise CandidateBuildError(f"build command `{shown}` could not start: {error}") from error
        if result.timed_out:
            raise CandidateBuildError(
                f"build command `{shown}` timed out after {self.timeout_s:g} s in {path}:\n"
                f"{tail(result.stdout, _TAIL_LINES)}"
            )
        if result.returncode != 0:
            raise CandidateBuildError(
                f"build command `{shown}` failed (exit {result.returncode}) in {path}:\n"
                f"{tail(result.stdout, _TAIL_LINES)}"
            )
        self._last[repository] = (key, result.stdout)
        return False, result.stdout
