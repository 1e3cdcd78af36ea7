"""Running a benchmark as a child process: its own process group, merged output, a capped log.

A benchmark is untrusted in the ways that matter here: it may flood its output, hang, or leave
worker processes behind (sglang spawns one scheduler per GPU). So every child starts a new
session (it leads its own process group), its stdout and stderr are read line by line into a
:class:`LogCapture` that keeps only the head and the tail, and stopping it always signals the
whole group: SIGTERM first, SIGKILL after a grace period.

A child may also be started another way (forked from a preloaded interpreter, see
:mod:`runners.workloads.preload`): a :class:`Launcher` starts it and hands back a
:class:`ChildProcess`, and the rest of the runner does not care which way it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

# A line longer than this (a progress bar redrawn with "\r" for hours, binary noise) is cut into
# pieces, so one endless line cannot grow the read buffer without bound.
MAX_LINE_BYTES = 64 * 1024
_READ_CHUNK = 64 * 1024
_POLL_S = 0.05


class LogCapture:
    """Keeps the first and the last ``max_bytes / 2`` of a stream of lines, and counts the rest.

    ``on_line`` sees every line, stored or not. It is called from the reader thread; an exception
    in it disables it rather than stopping the capture (a broken progress display must not lose
    the benchmark's log).
    """

    def __init__(self, max_bytes: int, on_line: Callable[[str], None] | None = None) -> None:
        self._head_budget = max(max_bytes // 2, 1)
        self._tail_budget = max(max_bytes - self._head_budget, 1)
        self._head: list[str] = []
        self._head_bytes = 0
        self._tail: deque[tuple[str, int]] = deque()
        self._tail_bytes = 0
        self._omitted_bytes = 0
        self._head_full = False
        self._on_line = on_line
        self._lock = threading.Lock()

    def add(self, line: str) -> None:
        """Record one line (without its newline); NUL characters become U+FFFD, as invalid UTF-8
        already did: no text column (PostgreSQL's least of all) stores a NUL."""
        if "\x00" in line:
            line = line.replace("\x00", "\ufffd")
        if self._on_line is not None:
            try:
                self._on_line(line)
            except Exception:
                self._on_line = None
        size = len(line.encode("utf-8", "replace")) + 1
        with self._lock:
            if not self._head_full and self._head_bytes + size <= self._head_budget:
                self._head.append(line)
                self._head_bytes += size
                return
            self._head_full = True
            if size > self._tail_budget:
                # Keep the end of an oversized line: the end is what the tail is for.
                keep = line.encode("utf-8", "replace")[-(self._tail_budget - 1) :].decode("utf-8", "replace")
                self._omitted_bytes += size - (len(keep.encode("utf-8", "replace")) + 1)
                line, size = keep, len(keep.encode("utf-8", "replace")) + 1
            self._tail.append((line, size))
            self._tail_bytes += size
            while self._tail_bytes > self._tail_budget:
                _, dropped = self._tail.popleft()
                self._tail_bytes -= dropped
                self._omitted_bytes += dropped

    @property
    def truncated(self) -> bool:
        """Whether any of the output was left out."""
        with self._lock:
            return self._omitted_bytes > 0

    def text(self) -> str:
        """The stored log: head, a marker line where bytes were left out, tail."""
        with self._lock:
            lines = list(self._head)
            if self._omitted_bytes:
                lines.append(f"[perftrack: {self._omitted_bytes} bytes of log omitted]")
            lines.extend(line for line, _ in self._tail)
        return "".join(line + "\n" for line in lines)


def _pump(stream: IO[bytes], capture: LogCapture) -> None:
    """Read ``stream`` to its end, handing complete lines to ``capture``."""
    pending = b""
    fd = stream.fileno()
    while True:
        # os.read returns what is there now, so a line is seen as soon as the child prints it.
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            capture.add(raw.decode("utf-8", "replace"))
        while len(pending) > MAX_LINE_BYTES:
            capture.add(pending[:MAX_LINE_BYTES].decode("utf-8", "replace"))
            pending = pending[MAX_LINE_BYTES:]
    if pending:
        capture.add(pending.decode("utf-8", "replace"))
    stream.close()


def start_pump(stream: IO[bytes], capture: LogCapture) -> threading.Thread:
    """A daemon thread that reads ``stream`` to its end into ``capture`` (started)."""
    reader = threading.Thread(target=_pump, args=(stream, capture), daemon=True, name="output-pump")
    reader.start()
    return reader


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies waiting to be reaped do not count)."""
    proc = Path("/proc")
    if proc.is_dir():
        # /proc tells zombies apart; killpg(pgid, 0) succeeds on them, which would make a
        # container whose init does not reap look as if the group never went away.
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


SUBPROCESS_LAUNCH: dict[str, Any] = {"mode": "subprocess"}


class ChildProcess(ABC):
    """A started benchmark process leading its own process group, its output pumped into a capture.

    ``launch`` says how it was started, for the run's recorded environment.
    """

    capture: LogCapture
    launch: dict[str, Any]

    @property
    @abstractmethod
    def pid(self) -> int:
        """The child's pid, which is also its process group id."""

    @abstractmethod
    def poll(self) -> int | None:
        """The exit status if the child has exited (negative: killed by that signal)."""

    @abstractmethod
    def wait(self, timeout_s: float | None) -> int | None:
        """Wait up to ``timeout_s`` (``None``: for ever) for the child; its exit status, or ``None``."""

    @abstractmethod
    def join_output(self, timeout_s: float = 5.0) -> None:
        """Wait for the reader to see the end of the output (a process outside the group that kept
        the pipe open could hold it forever, hence the timeout)."""

    def stop(self, grace_s: float) -> int:
        """Stop the whole group (SIGTERM, then SIGKILL after ``grace_s``); returns the exit status."""
        deadline = time.monotonic() + grace_s
        if self.poll() is None or group_alive(self.pid):
            self._signal(signal.SIGTERM)
            self.wait(max(deadline - time.monotonic(), 0.0))
            # The leader may have gone while workers it spawned still shut down.
            while group_alive(self.pid) and time.monotonic() < deadline:
                time.sleep(_POLL_S)
            if self.poll() is None or group_alive(self.pid):
                self._signal(signal.SIGKILL)
        code = self.wait(None)
        assert code is not None  # waiting for ever returns a status
        kill_deadline = time.monotonic() + 5.0
        while group_alive(self.pid) and time.monotonic() < kill_deadline:
            time.sleep(_POLL_S)
        self.join_output()
        return code

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)  # the group may be gone already


class ManagedProcess(ChildProcess):
    """A child started with :class:`subprocess.Popen` in a new session."""

    def __init__(
        self, popen: subprocess.Popen[bytes], capture: LogCapture, launch: Mapping[str, Any] | None = None
    ) -> None:
        self._popen = popen
        self.capture = capture
        self.launch = dict(launch or SUBPROCESS_LAUNCH)
        assert popen.stdout is not None
        self._reader = start_pump(popen.stdout, capture)

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        capture: LogCapture,
        on_start: Callable[[int], None] | None = None,
        launch: Mapping[str, Any] | None = None,
    ) -> ManagedProcess:
        """Start ``argv``; raises ``OSError`` (``FileNotFoundError``...) when it cannot start.

        ``on_start`` receives the process group id, so an agent can reap the group after a crash.
        """
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches every worker
        )
        if on_start is not None:
            on_start(popen.pid)
        return cls(popen, capture, launch)

    @property
    def pid(self) -> int:
        """The child's pid, which is also its process group id."""
        return self._popen.pid

    def poll(self) -> int | None:
        """The exit status if the child has exited (negative: killed by that signal)."""
        return self._popen.poll()

    def wait(self, timeout_s: float | None) -> int | None:
        """Wait up to ``timeout_s`` for the child; its exit status, or ``None`` if still running."""
        try:
            return self._popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def join_output(self, timeout_s: float = 5.0) -> None:
        """Wait for the reader to see the end of the output."""
        self._reader.join(timeout=timeout_s)


class Launcher(Protocol):
    """Starts a benchmark process; raises ``OSError`` when it cannot start."""

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        capture: LogCapture,
        on_start: Callable[[int], None] | None = None,
    ) -> ChildProcess:
        """Start ``argv`` in its own process group, its output going to ``capture``."""
        ...


class SubprocessLauncher:
    """The plain way: a fresh process per run (:class:`ManagedProcess`)."""

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        capture: LogCapture,
        on_start: Callable[[int], None] | None = None,
    ) -> ChildProcess:
        """Start ``argv`` with :class:`subprocess.Popen`."""
        return ManagedProcess.start(argv, env=env, cwd=cwd, capture=capture, on_start=on_start)


@dataclass(frozen=True)
class ProcessOutcome:
    """How a run-to-completion child ended."""

    exit_code: int | None
    timed_out: bool = False
    failure: str | None = None  # None when it started and exited 0 in time
    launch: dict[str, Any] = field(default_factory=dict)  # how it was started ({} if it did not)


def describe_exit(code: int) -> str | None:
    """A readable failure for an exit status, ``None`` for success."""
    if code == 0:
        return None
    if code > 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    hint = {
        "SIGKILL": " (out of memory?)",  # the kernel's OOM killer and cgroup limits send SIGKILL
        "SIGSEGV": " (segmentation fault)",
        "SIGBUS": " (bus error)",
        "SIGABRT": " (aborted)",
    }.get(name, "")
    return f"killed by {name}{hint}"


def start_failure(argv: Sequence[str], error: OSError) -> str:
    """A readable failure for a child that could not start."""
    if isinstance(error, FileNotFoundError):
        return f"could not start {argv[0]!r}: executable not found"
    if isinstance(error, PermissionError):
        return f"could not start {argv[0]!r}: permission denied"
    return f"could not start {argv[0]!r}: {error.strerror or error}"


CANCELLED = "cancelled by the runner (stop requested or lease lost)"


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    capture: LogCapture,
    timeout_s: float,
    grace_s: float,
    cancel: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
    launcher: Launcher | None = None,
) -> ProcessOutcome:
    """Run ``argv`` to completion, timeout or ``cancel``; never raises for a failure of the child.

    ``launcher`` starts the child (``None``: a plain subprocess).
    """
    try:
        child = (launcher or SubprocessLauncher()).start(
            argv, env=env, cwd=cwd, capture=capture, on_start=on_start
        )
    except OSError as error:
        return ProcessOutcome(exit_code=None, failure=start_failure(argv, error))
    deadline = time.monotonic() + timeout_s
    code: int | None = None
    cancelled = False
    try:
        while code is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # Without a cancel event one wait suffices; with one, look at it a few times a second.
            code = child.wait(remaining if cancel is None else min(remaining, 0.2))
            if code is None and cancel is not None and cancel.is_set():
                cancelled = True
                break
    finally:
        # Also on success: workers left behind would hold GPU memory during the next run.
        final = child.stop(grace_s)
    launch = dict(child.launch)
    if cancelled:
        return ProcessOutcome(exit_code=final, failure=CANCELLED, launch=launch)
    if code is None:
        return ProcessOutcome(
            exit_code=final, timed_out=True, failure=f"timed out after {timeout_s:g} s", launch=launch
        )
    return ProcessOutcome(exit_code=code, failure=describe_exit(code), launch=launch)
