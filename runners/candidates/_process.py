"""Run a child process with a hard timeout that also ends the children it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Seconds to wait for the pipes to drain after the process group was killed.
_DRAIN_S = 10.0


@dataclass(frozen=True)
class ProcessResult:
    """What a finished (or killed) child process left behind."""

    argv: tuple[str, ...]
    returncode: int | None  # None when it was killed for running past its timeout
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        """Whether the process was killed for running past its timeout."""
        return self.returncode is None


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    merge_stderr: bool = False,
) -> ProcessResult:
    """Run ``argv`` (no shell) in ``cwd``, capturing output; kill its whole process group on timeout."""
    # A new session makes the child the leader of its own process group, so a timeout also ends
    # what it spawned (pip's build backends, git's remote helpers) instead of leaving orphans.
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(input_text, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            stdout, stderr = _drain(process)
            return ProcessResult(tuple(argv), None, stdout, stderr)
        except BaseException:
            _kill_group(process)
            raise
    return ProcessResult(tuple(argv), process.returncode, stdout or "", stderr or "")


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)


def _drain(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        stdout, stderr = process.communicate(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        # Something outside the group still holds the pipes; give up on the rest of the output.
        return "", ""
    return stdout or "", stderr or ""
