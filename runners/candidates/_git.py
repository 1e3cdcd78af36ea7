"""Calls to the ``git`` executable: argument lists, a timeout on every call, no prompts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from runners.candidates._process import ProcessResult, run_process
from runners.candidates.errors import CandidateBuildError
from runners.jobenv import job_environ

# Commits the builder makes (cherry-picks, squashes) get this committer, so building works on
# hosts without any git configuration.
COMMITTER_NAME = "perftrack"
COMMITTER_EMAIL = "perftrack@localhost"

# Settings that would change which repository git works on if inherited from the agent's environment.
_REPOSITORY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)

# Per-call configuration that keeps a host's global git config from changing what we build:
# no commit signing (no key on a GPU host), no hooks from templates or a global hooksPath.
_CONFIG = (
    "-c", "commit.gpgSign=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "advice.detachedHead=false",
    "-c", "color.ui=false",
)  # fmt: skip

# Lines of stderr kept in error messages.
_TAIL_LINES = 20


def git_environment(
    extra: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for git calls: ``base`` (``None``: the agent's, through the job allow-list of
    :mod:`runners.jobenv`), without prompts, in the C locale, with our committer."""
    # A child needs PATH, HOME and proxy settings, never the agent's token: start from the allow-list.
    source = job_environ() if base is None else base
    env = {key: value for key, value in source.items() if key not in _REPOSITORY_ENV}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GCM_INTERACTIVE="never",
        LC_ALL="C",
        GIT_COMMITTER_NAME=COMMITTER_NAME,
        GIT_COMMITTER_EMAIL=COMMITTER_EMAIL,
    )
    if extra:
        env.update(extra)
    return env


def tail(text: str, lines: int = _TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``, stripped."""
    return "\n".join(text.strip().splitlines()[-lines:])


class Git:
    """``git`` run in one directory (a bare mirror or a worktree) with one timeout."""

    def __init__(
        self,
        cwd: Path,
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.env = dict(env or {})  # added to every call's environment
        self.base_env = None if base_env is None else dict(base_env)  # see git_environment

    def run(
        self,
        *args: str,
        check: bool = True,
        input_text: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessResult:
        """Run ``git args``; raise CandidateBuildError on timeout, and on failure when ``check``."""
        result = run_process(
            ["git", *_CONFIG, *args],
            cwd=self.cwd,
            timeout_s=self.timeout_s,
            env=git_environment({**self.env, **(env or {})}, base=self.base_env),
            input_text=input_text,
        )
        if result.timed_out:
            raise CandidateBuildError(f"git {args[0]} timed out after {self.timeout_s:g} s in {self.cwd}")
        if check and result.returncode != 0:
            raise CandidateBuildError(
                f"git {' '.join(args)} failed (exit {result.returncode}) in {self.cwd}: {tail(result.stderr)}"
            )
        return result

    def out(self, *args: str, input_text: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """Stdout of a git call that must succeed, stripped."""
        return self.run(*args, input_text=input_text, env=env).stdout.strip()

    def succeeds(self, *args: str) -> bool:
        """Whether a git call exits 0 (for questions such as ``merge-base --is-ancestor``)."""
        return self.run(*args, check=False).returncode == 0
