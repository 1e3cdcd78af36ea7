"""The preloaded interpreter (zygote): imports modules once, then forks a child per ``python -m`` run.

This file is a program, not a library: the runner starts it as ``python -c <this source>
CONTROL_FD MODULE...`` (so it needs nothing but the standard library, and nothing on the
runner's ``sys.path`` can shadow what it imports), with the environment the benchmarks get.
It imports MODULE..., runs nothing else, makes sure it is the only thread (forking a process
that has other threads copies locks they may hold), reports on the control socket and then
waits for requests there. See :mod:`runners.workloads.preload` and
:mod:`runners.workloads.preload_zygote` for the runner's side.

Protocol, on ``SOCK_SEQPACKET`` Unix sockets (one JSON object per message):

- zygote -> runner, once on the control socket: ``{"ok": true, "pid": ..., "preloaded": [...],
  "import_s": ...}`` or ``{"ok": false, "reason": "..."}``;
- runner -> zygote on the control socket: ``{"module", "args", "env", "cwd", "python"}`` with three
  descriptors: the job's own socket, the child's stdout and its stderr;
- zygote -> runner on the job's socket: ``{"pid": N}`` once the child leads its own session (or
  ``{"error": "..."}``), later ``{"exit": CODE}`` as :attr:`subprocess.Popen.returncode` has it.

End of file on the control socket (the runner closed it or died) ends the zygote; children it
forked run on in their own sessions, as subprocesses outlive a killed parent.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_DESCRIPTORS = 3  # the job's socket, stdout, stderr


@dataclass(frozen=True)
class ChildJob:
    """What a forked child runs: ``python -m module args...`` in ``cwd`` with ``env``."""

    module: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    python: str


def thread_count() -> int:
    """Native threads of this process (``/proc``; Python's own count misses threads C code started)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def child_sys_path(cwd: str, env: dict[str, str], base_path: list[str], *, safe_path: bool) -> list[str]:
    """``sys.path`` as ``python -m`` started in ``cwd`` with ``env`` would have it.

    ``base_path`` is this interpreter's path without its first entry and without PYTHONPATH
    (the zygote runs without one): the standard library, site-packages and ``.pth`` additions.
    """
    entries = [] if safe_path else [cwd]
    pythonpath = env.get("PYTHONPATH")
    if pythonpath:
        entries += [os.path.normpath(os.path.join(cwd, entry)) for entry in pythonpath.split(os.pathsep)]
    return entries + base_path


def _preload(modules: list[str]) -> dict[str, Any]:
    start = time.perf_counter()
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as error:  # an import may even call sys.exit
            return {"ok": False, "reason": f"importing {name} failed: {type(error).__name__}: {error}"}
    import_s = time.perf_counter() - start
    threads = thread_count()
    if threads > 1:
        # Some libraries start thread pools at import (numpy's OpenBLAS) and stop them in an
        # at-fork handler. One throwaway fork runs those handlers; what is left afterwards is a
        # thread nobody stops, and forking beside it is unsafe.
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    left = thread_count()
    if left > 1:
        return {"ok": False, "reason": f"{left} threads run after the imports; forking them is unsafe"}
    # The imports' objects live as long as the interpreter: out of the collector's sight, a child's
    # collections neither walk them nor write to (and so copy) the pages they share with the zygote.
    gc.collect()
    gc.freeze()
    return {
        "ok": True,
        "pid": os.getpid(),
        "preloaded": modules,
        "import_s": round(import_s, 3),
        "threads_after_import": threads,
    }


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the runner gave up on this job: nothing to tell
        sock.send(json.dumps(message).encode())


class _Server:
    """The zygote's loop: requests on the control socket, children's exits via pidfds."""

    def __init__(self, control: socket.socket, base_path: list[str]) -> None:
        self.control = control
        self.base_path = base_path
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ)
        self.children: dict[int, tuple[socket.socket, int | None]] = {}  # pid -> (job socket, pidfd)

    def serve(self) -> ChildJob | None:
        """Serve until the control socket closes (``None``); in a forked child, its job."""
        while True:
            polling = any(pidfd is None for _, pidfd in self.children.values())
            for key, _ in self.selector.select(timeout=0.05 if polling else None):
                if key.fileobj is self.control:
                    try:
                        data, fds, _, _ = socket.recv_fds(self.control, MAX_MESSAGE_BYTES, _DESCRIPTORS)
                    except OSError:
                        data, fds = b"", []
                    if not data:
                        return None
                    job = self._handle(data, fds)
                    if job is not None:
                        return job
            self._reap()

    def _handle(self, data: bytes, fds: list[int]) -> ChildJob | None:
        if len(fds) != _DESCRIPTORS:
            for fd in fds:
                os.close(fd)
            return None
        conn = socket.socket(fileno=fds[0])
        out_fd, err_fd = fds[1], fds[2]
        try:
            request = json.loads(data)
            job = ChildJob(
                module=str(request["module"]),
                args=[str(arg) for arg in request["args"]],
                env={str(k): str(v) for k, v in request["env"].items()},
                cwd=str(request["cwd"]),
                python=str(request["python"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            _send(conn, {"error": f"bad request: {error}"})
            self._drop(conn, out_fd, err_fd)
            return None
        threads = thread_count()
        if threads != 1:
            _send(conn, {"error": f"the preloaded interpreter runs {threads} threads; will not fork"})
            self._drop(conn, out_fd, err_fd)
            return None
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child would print what the zygote had buffered
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            os.setsid()  # its own session and process group, as start_new_session does
            os.write(ready_w, b"!")
            os.close(ready_w)
            self._become_child(conn, job, out_fd, err_fd)
            return job
        os.close(ready_w)
        os.close(out_fd)
        os.close(err_fd)
        # The runner signals the group by the pid it is told: tell it once the group exists.
        os.read(ready_r, 1)
        os.close(ready_r)
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None  # no pidfds (old kernel): the loop polls instead
        if pidfd is not None:
            self.selector.register(pidfd, selectors.EVENT_READ)
        self.children[pid] = (conn, pidfd)
        _send(conn, {"pid": pid})
        return None

    def _drop(self, conn: socket.socket, out_fd: int, err_fd: int) -> None:
        conn.close()
        os.close(out_fd)
        os.close(err_fd)

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 255 << 8  # reaped elsewhere: should not happen
            if done == 0:
                continue
            conn, pidfd = self.children.pop(pid)
            if pidfd is not None:
                self.selector.unregister(pidfd)
                os.close(pidfd)
            _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
            conn.close()

    def _become_child(self, conn: socket.socket, job: ChildJob, out_fd: int, err_fd: int) -> None:
        """In the forked child: drop the zygote's sockets, take the job's streams, place and environment."""
        self.selector.close()
        self.control.close()
        conn.close()
        for other, pidfd in self.children.values():
            other.close()
            if pidfd is not None:
                os.close(pidfd)
        self.children.clear()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # as stdin=DEVNULL
        os.close(devnull)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in {out_fd, err_fd}:
            if fd > 2:
                os.close(fd)
        os.chdir(job.cwd)
        os.environ.clear()
        os.environ.update(job.env)
        sys.path[:] = child_sys_path(
            os.getcwd(), job.env, self.base_path, safe_path=bool(sys.flags.safe_path)
        )
        importlib.invalidate_caches()
        sys.argv = ["-m", *job.args]
        sys.orig_argv = [job.python, "-m", job.module, *job.args]


def run_child(job: ChildJob) -> None:
    """Run the job's module in this forked child, then end the process as ``python -m`` would.

    The exit status, the message of ``sys.exit("...")``, the traceback of an uncaught exception,
    non-daemon threads, ``atexit`` handlers and buffered output (Python's and C's stdio) all end
    the same way. What is skipped is the interpreter's own finalization (tearing down every
    module): a quarter of a second for torch, in every run, with nothing a benchmark can observe.
    """
    code = 0
    try:
        runpy.run_module(job.module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = _exit_status(exit_.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        _finish()
        # As CPython does: die of the signal, so the parent sees -SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _finish()
    os._exit(code)


def _exit_status(code: object) -> int:
    """The process status ``raise SystemExit(code)`` ends with; a message goes to stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr)
    return 1


def _finish() -> None:
    """What interpreter shutdown does that a program can see: threads, atexit, flushed streams."""
    # Python's own first step: the threading atexit hooks (an executor never shut down stops its
    # workers there), then every non-daemon thread joined. Joining by hand would wait for ever on
    # such a pool's idle workers.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):  # C extensions' printf output, buffered in libc
        ctypes.CDLL(None).fflush(None)


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, CONTROL_FD, MODULE...]``. In a forked child, runs the job's module
    (:func:`run_child`), which ends the process with the status ``python -m`` would."""
    control = socket.socket(fileno=int(argv[1]))
    modules = argv[2:]
    # "-c" put the working directory first on sys.path: no import may come from there.
    base_path = list(sys.path if sys.flags.safe_path else sys.path[1:])
    sys.path[:] = base_path
    report = _preload(modules)
    control.send(json.dumps(report).encode())
    if not report["ok"]:
        return
    job = _Server(control, base_path).serve()
    if job is None:
        return
    run_child(job)


if __name__ == "__main__":
    main(sys.argv)
