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
the zygote's in a variable read at import (:data:`IMPORT_SENSITIVE`), when the working directory
or ``PYTHONPATH`` would provide a preloaded module, or when the zygote cannot start or has died
twice in a row.
"""

from __future__ import annotations

import importlib.machinery
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runners.workloads import preload_server
from runners.workloads.process import (
    SUBPROCESS_LAUNCH,
    ChildProcess,
    LogCapture,
    ManagedProcess,
    group_alive,
    start_pump,
)

logger = logging.getLogger("perftrack.runner")

FORKED_MODE = "forked from preloaded interpreter"
# Variables torch, OpenMP, MKL, OpenBLAS, the dynamic loader or Python itself read when a module is
# imported or the interpreter starts: a job whose values differ cannot use the zygote's imports.
# PYTHONPATH is the exception: the child rebuilds sys.path from its own (it only places imports).
IMPORT_SENSITIVE = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "CUDA", "LD_", "PYTHON")
REBUILT_IN_CHILD = frozenset({"PYTHONPATH"})
# torch._inductor.compile_fx is what the first torch.compile() call imports: 0.9 s of a toy run
# when the child has to import it itself (measured 2026-12-01, docs/runner-preload.md).
DEMO_PRELOAD = ("torch", "torch._dynamo", "torch._inductor.codecache", "torch._inductor.compile_fx")
_REPLY_TIMEOUT_S = 30.0


class PreloadError(Exception):
    """The zygote could not start, refused, or went away mid-request."""


def import_sensitive(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that must match the zygote's for a fork to stand in for a start."""
    return {
        name: value
        for name, value in env.items()
        if name.startswith(IMPORT_SENSITIVE) and name not in REBUILT_IN_CHILD
    }


def module_command(argv: Sequence[str], python: str) -> tuple[str, list[str]] | None:
    """``(module, args)`` when ``argv`` is exactly ``python -m module args...``, else ``None``."""
    if len(argv) < 3 or argv[0] != python or argv[1] != "-m" or not argv[2] or argv[2].startswith("-"):
        return None
    return argv[2], list(argv[3:])


def refusal(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    python: str,
    zygote_env: Mapping[str, str] | None,
    modules: Sequence[str],
) -> str | None:
    """Why this run cannot be forked from the zygote (``None``: it can).

    ``zygote_env`` is the environment of the running zygote (``None``: none runs yet; the next one
    starts with this run's).
    """
    if module_command(argv, python) is None:
        return f"the command is not `{python} -m MODULE ...`"
    if zygote_env is not None:
        mine, theirs = import_sensitive(env), import_sensitive(zygote_env)
        differing = sorted(name for name in mine.keys() | theirs.keys() if mine.get(name) != theirs.get(name))
        if differing:
            return f"the environment differs from the preloaded interpreter's in {', '.join(differing)}"
    # What `python -m` puts before site-packages; a preloaded package found there would not be
    # the one a fresh process imports.
    front = [
        str(cwd),
        *(os.path.join(cwd, entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry),
    ]
    for top in sorted({name.split(".")[0] for name in modules}):
        if importlib.machinery.PathFinder.find_spec(top, front) is not None:
            return f"the working directory or PYTHONPATH provides the preloaded module {top!r}"
    return None


class ForkedProcess(ChildProcess):
    """A child forked by the zygote; its exit status comes over its own socket."""

    def __init__(
        self,
        pid: int,
        conn: socket.socket,
        reader: threading.Thread,
        capture: LogCapture,
        launch: dict[str, Any],
    ) -> None:
        self._pid = pid
        self._conn = conn
        self._reader = reader
        self.capture = capture
        self.launch = launch
        self._code: int | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The child's pid, which is also its process group id."""
        return self._pid

    def poll(self) -> int | None:
        """The exit status if the child has exited (negative: killed by that signal)."""
        return self.wait(0.0)

    def wait(self, timeout_s: float | None) -> int | None:
        """Wait up to ``timeout_s`` (``None``: for ever) for the zygote to report the child's exit."""
        with self._lock:
            if self._code is not None:
                return self._code
            readable, _, _ = select.select([self._conn], [], [], timeout_s)
            if not readable:
                return None
            try:
                data = self._conn.recv(4096)
            except OSError:
                data = b""
            self._code = _exit_code(data)
            if self._code is None:
                self._code = self._orphaned()
            self._conn.close()
            return self._code

    def join_output(self, timeout_s: float = 5.0) -> None:
        """Wait for the reader to see the end of the output."""
        self._reader.join(timeout=timeout_s)

    def _orphaned(self) -> int:
        # The zygote died before the child: nobody can learn its exit status any more, so the
        # run cannot be trusted; end the group rather than leave it running unwatched.
        logger.warning(
            "the preloaded interpreter died while benchmark %s ran; its process group is killed "
            "and its exit status is lost",
            self._pid,
        )
        self._signal(signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while group_alive(self._pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return -signal.SIGKILL


def _exit_code(data: bytes) -> int | None:
    try:
        message = json.loads(data) if data else None
    except ValueError:
        return None
    code = message.get("exit") if isinstance(message, dict) else None
    return code if isinstance(code, int) else None


class _Zygote:
    """One running preloaded interpreter and the runner's end of its control socket."""

    def __init__(self, python: str, modules: Sequence[str], env: Mapping[str, str], timeout_s: float) -> None:
        self.env = {name: value for name, value in env.items() if name not in REBUILT_IN_CHILD}
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control = ours
        source = Path(preload_server.__file__).read_text(encoding="utf-8")
        try:
            self.popen = subprocess.Popen(
                [python, "-c", source, str(theirs.fileno()), *modules],
                env=self.env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a Ctrl-C meant for the runner is not meant for it
            )
        except OSError as error:
            ours.close()
            raise PreloadError(f"could not start {python}: {error}") from error
        finally:
            theirs.close()
        assert self.popen.stdout is not None
        self._log = LogCapture(64 * 1024, lambda line: logger.info("preloaded interpreter: %s", line))
        self._reader = start_pump(self.popen.stdout, self._log)
        readable, _, _ = select.select([ours], [], [], timeout_s)
        report = _json(ours.recv(65536)) if readable else None
        if report is None or not report.get("ok"):
            reason = (
                f"it did not report within {timeout_s:g} s"
                if not readable
                else str(report.get("reason"))
                if report
                else "it exited before reporting"
            )
            self.close()
            raise PreloadError(reason)
        self.preloaded = [str(name) for name in report.get("preloaded", [])]
        self.import_s = float(report.get("import_s", 0.0))

    @property
    def pid(self) -> int:
        """The zygote's pid."""
        return self.popen.pid

    def alive(self) -> bool:
        """Whether the zygote still runs."""
        return self.popen.poll() is None

    def survived(self, wait_s: float = 1.0) -> bool:
        """Whether the zygote still runs ``wait_s`` after it failed a request (it may be dying)."""
        try:
            self.popen.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return True
        return False

    def fork(
        self,
        python: str,
        module: str,
        args: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        capture: LogCapture,
    ) -> tuple[int, socket.socket, threading.Thread]:
        """Ask for a child running ``python -m module args``; its pid, job socket and output reader."""
        request = json.dumps(
            {"module": module, "args": args, "env": dict(env), "cwd": str(cwd), "python": python}
        ).encode()
        out_r, out_w = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # One pipe for both streams, as stderr=STDOUT does: the lines keep their order.
            socket.send_fds(self.control, [request], [theirs.fileno(), out_w, out_w])
        except OSError as error:
            mine.close()
            os.close(out_r)
            raise PreloadError(f"the preloaded interpreter took no request: {error}") from error
        finally:
            theirs.close()
            os.close(out_w)
        reader = start_pump(os.fdopen(out_r, "rb"), capture)
        readable, _, _ = select.select([mine], [], [], _REPLY_TIMEOUT_S)
        reply = _json(mine.recv(65536)) if readable else None
        pid = reply.get("pid") if reply else None
        if not isinstance(pid, int):
            mine.close()
            reader.join(timeout=1.0)
            why = (reply or {}).get("error") or "no answer from the preloaded interpreter"
            raise PreloadError(str(why))
        return pid, mine, reader

    def close(self, timeout_s: float = 10.0) -> None:
        """End the zygote (end of file on its control socket; SIGKILL if it lingers)."""
        self.control.close()
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self._reader.join(timeout=5.0)


def _json(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data) if data else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
        self._zygote: _Zygote | None = None
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

    def _running(self, env: Mapping[str, str]) -> _Zygote:
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
            self._zygote = _Zygote(self.python, self.modules, env, self.start_timeout_s)
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
