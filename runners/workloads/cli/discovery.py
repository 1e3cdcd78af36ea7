"""Ask a built candidate which options its command line accepts: ``--help``, once per commit.

After the builder has installed a candidate, the benchmark's executable (``sglang generate``, or the
toy's ``python -m toydit generate``) is that commit's own, so its ``--help`` is the truth about that
commit. The answer is kept per (commit, command, question) for the life of the agent: a nightly runs
several cases of one commit, and a bisection asks each commit once. A failed question is not kept,
so a passing fault (a loaded host timing out) is asked again by the next job.

``sglang generate --model-path M --help`` includes the options the model's pipeline adds (0.5.23's
``add_resolved_pipeline_config_cli_args``, e.g. FLUX.3's); ``sglang serve --help`` prints the
language-model server's help before the diffusion server's, which :func:`parse_help` skips.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runners.workloads.cli.options import CliOptions, HelpUnreadable, parse_help
from runners.workloads.process import start_failure

__all__ = ["HelpFailed", "OptionsCache"]

# Lines of a failed --help quoted in the setup failure.
_TAIL_LINES = 12


class HelpFailed(RuntimeError):
    """The command's ``--help`` could not be run or read: the candidate's options are unknown."""


@dataclass(frozen=True)
class _Key:
    commit: str
    argv: tuple[str, ...]


@dataclass
class OptionsCache:
    """The options each asked (commit, ``--help`` command line) accepts; see the module docstring."""

    timeout_s: float = 600.0
    _known: dict[_Key, CliOptions] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def options(
        self,
        argv: Sequence[str],
        *,
        commit: str,
        env: Mapping[str, str],
        cwd: Path | None,
        label: str,
    ) -> CliOptions:
        """The options ``argv`` (a ``--help`` command line) lists at ``commit``.

        ``label`` names the command in messages (``sglang generate``). Raises :class:`HelpFailed`
        when the command does not start, times out, exits non-zero or lists no option.
        """
        key = _Key(commit, tuple(argv))
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        where = f"`{label}` at {commit[:12] or 'an unknown commit'}"
        text = self._ask(argv, env=env, cwd=cwd, where=where)
        try:
            options = parse_help(text, source=where)
        except HelpUnreadable as error:
            raise HelpFailed(f"could not read the options of {where}: {error}:\n{_tail(text)}") from error
        with self._lock:
            self._known[key] = options
        return options

    def _ask(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None, where: str) -> str:
        shown = shlex.join(argv)
        try:
            done = subprocess.run(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout_s,
                start_new_session=True,  # like the benchmark: never the agent's terminal or signals
                check=False,
            )
        except OSError as error:
            raise HelpFailed(f"{start_failure(argv, error)} (asking {where} for its options)") from error
        except subprocess.TimeoutExpired as error:
            raise HelpFailed(
                f"could not ask {where} for its options: `{shown}` took more than {self.timeout_s:g} s"
            ) from error
        stdout = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace")
            raise HelpFailed(
                f"could not ask {where} for its options: `{shown}` exited with code {done.returncode}:\n"
                f"{_tail(stderr or stdout)}"
            )
        return stdout


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-_TAIL_LINES:])
