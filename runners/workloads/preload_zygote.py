"""The runner's end of one preloaded interpreter (the zygote) and of each child it forks.

:class:`Zygote` starts :mod:`runners.workloads.preload_server` as ``python -c``, waits for its
report of what it imported, and asks it over a ``SOCK_SEQPACKET`` control socket for a child per
run: the child's output comes over a pipe into the run's :class:`LogCapture`, its exit status over
a socket of its own, read by :class:`ForkedProcess` (a :class:`ChildProcess` like
:class:`ManagedProcess`). Anything that goes wrong on the way is a :class:`PreloadError`; when to
start, restart or give up on a zygote is :class:`runners.workloads.preload.PreloadLauncher`'s call.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runners.workloads import preload_server
from runners.workloads.preload_rules import REBUILT_IN_CHILD
from runners.workloads.process import ChildProcess, LogCapture, group_alive, start_pump

logger = logging.getLogger("perftrack.runner")

_REPLY_TIMEOUT_S = 30.0


class PreloadError(Exception):
    """The zygote could not start, refused, or went away mid-request."""


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


class Zygote:
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
