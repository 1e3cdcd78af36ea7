"""Launching ``python -m`` benchmarks from a preloaded interpreter (a fork server, "zygote").

On a CPU runner a toy run spends more than half its wall time importing torch. The measured
quantity (per-step times after the compile warmup) does not depend on how torch got imported, so
:class:`PreloadLauncher` keeps one interpreter that imported the configured modules
(:mod:`runners.workloads.preload_server`) and forks a child per run from it. The child leads its
own session, writes to the pipe the runner reads (same :class:`LogCapture`, same lines), and its
exit status reaches the runner as a subprocess's return code would: :class:`ForkedProcess` is a
:class:`ChildProcess` like :class:`ManagedProcess`.

A run falls back to a plain subprocess, and the log line and the recorded ``launch`` say why,
when its command is not ``<the zygote's python> -m MODULE ...``, when its environment differs from
the zygote's in a variable read at import
(:data:`~runners.workloads.preload_rules.IMPORT_SENSITIVE`), when the working directory or
``PYTHONPATH`` would provide a preloaded module, or when the zygote cannot start or has died twice
in a row.

This module owns that choice (:class:`PreloadLauncher`); the checks of a run live in
:mod:`runners.workloads.preload_rules`, the zygote's control socket and the forked children in
:mod:`runners.workloads.preload_zygote`.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from runners.workloads.preload_rules import module_command, refusal
from runners.workloads.preload_zygote import ForkedProcess, PreloadError, Zygote
from runners.workloads.process import SUBPROCESS_LAUNCH, ChildProcess, LogCapture, ManagedProcess

logger = logging.getLogger("perftrack.runner")

FORKED_MODE = "forked from preloaded interpreter"
# What the demo's runner preloads. torch._inductor.compile_fx is what the first torch.compile() call
# imports; left out, each toy run imports it itself (the cost: docs/runner-preload.md).
DEMO_PRELOAD = ("torch", "torch._dynamo", "torch._inductor.codecache", "torch._inductor.compile_fx")


class PreloadLauncher:
    """Starts ``python -m`` runs as forks of a preloaded interpreter, anything else as a subprocess.

    The zygote starts with the first run that can use it, in that run's environment (without
    PYTHONPATH). When it is found dead it is restarted once; when that fails too, every later run
    is a plain subprocess. :meth:`close` ends it.
    """

    def __init__(
        self, modules: Sequence[str], *, python: str = sys.executable, start_timeout_s: float = 120.0
    ) -> None:
        self.modules = tuple(modules)
        self.python = python
        self.start_timeout_s = start_timeout_s
        self._zygote: Zygote | None = None
        self._broken: str | None = None  # why preloading is off for good
        self._lock = threading.Lock()

    @property
    def server_pid(self) -> int | None:
        """The running zygote's pid (``None``: none runs)."""
        return self._zygote.pid if self._zygote is not None and self._zygote.alive() else None

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        capture: LogCapture,
        on_start: Callable[[int], None] | None = None,
    ) -> ChildProcess:
        """Fork ``argv`` from the zygote when it can, else start it as a subprocess (logged either way)."""
        workdir = cwd or Path.cwd()
        with self._lock:
            reason = self._broken or refusal(
                argv,
                env,
                workdir,
                python=self.python,
                zygote_env=self._zygote.env if self._zygote is not None and self._zygote.alive() else None,
                modules=self.modules,
            )
            if reason is None:
                try:
                    child = self._fork(argv, env, workdir, capture)
                except PreloadError as error:
                    reason = f"the preloaded interpreter failed: {error}"
                else:
                    logger.info(
                        "benchmark forked from the preloaded interpreter (pid %s, preloaded %s)",
                        child.pid,
                        ", ".join(self.modules),
                    )
                    if on_start is not None:
                        on_start(child.pid)
                    return child
        logger.info("benchmark started as a plain subprocess: %s", reason)
        return ManagedProcess.start(
            argv,
            env=env,
            cwd=cwd,
            capture=capture,
            on_start=on_start,
            launch={**SUBPROCESS_LAUNCH, "preload_skipped": reason},
        )

    def _fork(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, capture: LogCapture
    ) -> ForkedProcess:
        command = module_command(argv, self.python)
        assert command is not None
        module, args = command
        for attempt in range(2):
            zygote = self._running(env)
            try:
                pid, conn, reader = zygote.fork(self.python, module, args, env=env, cwd=cwd, capture=capture)
            except PreloadError:
                if zygote.survived() or attempt == 1:
                    if attempt == 1:
                        self._give_up("it failed again after a restart")
                    raise
                continue  # it died: one restart
            launch = {
                "mode": FORKED_MODE,
                "preloaded": list(zygote.preloaded),
                "preload_import_s": zygote.import_s,
                "python": self.python,
            }
            return ForkedProcess(pid, conn, reader, capture, launch)
        raise AssertionError("unreachable")

    def _running(self, env: Mapping[str, str]) -> Zygote:
        """The live zygote; (re)started when there is none or it died (once per death)."""
        if self._zygote is not None and self._zygote.alive():
            return self._zygote
        if self._zygote is not None:
            logger.warning(
                "the preloaded interpreter (pid %s) exited with %s; restarting it",
                self._zygote.pid,
                self._zygote.popen.returncode,
            )
            self._zygote.close()
            self._zygote = None
        try:
            self._zygote = Zygote(self.python, self.modules, env, self.start_timeout_s)
        except PreloadError as error:
            self._give_up(f"it could not start: {error}")
            raise
        logger.info(
            "preloaded interpreter %s started: imported %s in %.2f s",
            self._zygote.pid,
            ", ".join(self.modules),
            self._zygote.import_s,
        )
        return self._zygote

    def _give_up(self, why: str) -> None:
        self._broken = f"preloading is off: {why}"
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

    def close(self) -> None:
        """End the zygote, if one runs (children it forked are the caller's to stop)."""
        with self._lock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
