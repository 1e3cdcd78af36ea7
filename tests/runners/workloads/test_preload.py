"""The preloaded-interpreter launch path: real zygotes, real forks, small stdlib preloads (no torch)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runners.workloads.base import WorkloadContext
from runners.workloads.environment import EnvironmentProbe
from runners.workloads.preload import FORKED_MODE, PreloadLauncher
from runners.workloads.preload_rules import import_sensitive, module_command, refusal
from runners.workloads.process import (
    CANCELLED,
    LogCapture,
    ProcessOutcome,
    SubprocessLauncher,
    group_alive,
    run_process,
)
from runners.workloads.sglang import SglangWorkload
from tests.runners.workloads.test_sglang import SHA, gone, small_case
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # forks a preloaded zygote per test

ROOT = Path(__file__).resolve().parents[3]
PYTHON = sys.executable
PRELOAD = ("json", "decimal")

# The benchmark stand-in: prints what it sees, then does what its first argument says.
PROBE_MODULE = """
import json, os, subprocess, sys, time

def main():
    action = sys.argv[1]
    if action == "show":
        print("SEEN " + json.dumps({
            "argv": sys.argv, "cwd": os.getcwd(), "path": sys.path, "name": __name__,
            "env": {k: os.environ.get(k) for k in ("PROBE_VAR", "PYTHONPATH", "OMP_NUM_THREADS")},
            "environ_c": os.popen("echo $PROBE_VAR").read().strip(),
            "pid_is_pgid": os.getpgid(0) == os.getpid(), "sid": os.getsid(0) == os.getpid(),
            "stdin": sys.stdin.read(),
        }))
    elif action == "interleave":
        for i in range(5):
            print(f"out {i}", flush=True)
            print(f"err {i}", file=sys.stderr, flush=True)
        sys.stdout.write("no newline at the end")
    elif action == "exit":
        sys.exit(int(sys.argv[2]))
    elif action == "message":
        sys.exit("a message for stderr")
    elif action == "raise":
        raise ValueError("boom from the benchmark")
    elif action == "kill":
        print("about to die", flush=True)
        os.kill(os.getpid(), int(sys.argv[2]))
        time.sleep(5)
    elif action == "ending":
        import atexit, ctypes, threading
        atexit.register(lambda: print("atexit ran", flush=True))
        late = threading.Thread(target=lambda: (time.sleep(0.3), print("thread done", flush=True)))
        late.start()
        # An executor never shut down (torch's compile workers): Python stops it at exit.
        from concurrent.futures import ThreadPoolExecutor
        globals()["POOL"] = ThreadPoolExecutor(2)  # kept alive until the interpreter ends
        POOL.submit(print, "pool ran", flush=True)
        libc = ctypes.CDLL(None)
        libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 0, 65536)  # fully buffered
        libc.printf(b"from C\\n")
        sys.stdout.write("left in the buffer\\n")  # a pipe: block-buffered, not flushed yet
        sys.exit(int(sys.argv[2]))
    elif action == "hang":
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("PIDS " + json.dumps([os.getpid(), worker.pid]), flush=True)
        time.sleep(60)

main()
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A working directory holding the ``probe_bench`` module."""
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "probe_bench.py").write_text(textwrap.dedent(PROBE_MODULE), encoding="utf-8")
    return folder


@pytest.fixture
def launcher() -> Iterator[PreloadLauncher]:
    """A launcher preloading two stdlib modules; its zygote must be gone after close()."""
    preload = PreloadLauncher(PRELOAD, start_timeout_s=30.0)
    yield preload
    pid = preload.server_pid
    preload.close()
    assert preload.server_pid is None
    if pid is not None:
        assert gone(pid), "the preloaded interpreter outlived close()"


def job_env(**extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUNBUFFERED": "1", "PROBE_VAR": "from-job"}
    env.update(extra)
    return env


def run(
    launcher: SubprocessLauncher | PreloadLauncher,
    tree: Path,
    *args: str,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    timeout_s: float = 20.0,
    cancel: threading.Event | None = None,
    lines: list[str] | None = None,
) -> tuple[ProcessOutcome, list[str]]:
    """Run the probe; its output lines go to ``lines`` as they come (a new list when not given)."""
    lines = [] if lines is None else lines
    capture = LogCapture(1 << 20, lines.append)
    outcome = run_process(
        argv or [PYTHON, "-m", "probe_bench", *args],
        env=env or job_env(),
        cwd=tree,
        capture=capture,
        timeout_s=timeout_s,
        grace_s=0.5,
        cancel=cancel,
        launcher=launcher,
    )
    return outcome, lines


def seen(lines: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(next(line for line in lines if line.startswith("SEEN "))[5:])
    return found


def test_a_forked_run_sees_what_a_fresh_process_sees(launcher: PreloadLauncher, tree: Path) -> None:
    env = job_env(PYTHONPATH=f"lib{os.pathsep}{tree.parent}{os.pathsep}", OMP_NUM_THREADS="1")
    forked, forked_lines = run(launcher, tree, "show", "x y", env=env)
    fresh, fresh_lines = run(SubprocessLauncher(), tree, "show", "x y", env=env)
    assert forked.exit_code == fresh.exit_code == 0
    assert forked.launch["mode"] == FORKED_MODE
    assert forked.launch["preloaded"] == list(PRELOAD)
    assert fresh.launch == {"mode": "subprocess"}
    mine, theirs = seen(forked_lines), seen(fresh_lines)
    assert mine == theirs  # argv, cwd, sys.path, __name__, env (Python's and C's), session, stdin
    assert mine["argv"] == [str(tree / "probe_bench.py"), "show", "x y"]
    assert mine["cwd"] == str(tree)
    assert mine["name"] == "__main__"
    assert mine["env"]["PROBE_VAR"] == mine["environ_c"] == "from-job"
    assert mine["pid_is_pgid"]
    assert mine["sid"]
    assert mine["stdin"] == ""


def test_both_streams_are_captured_line_by_line_in_order(launcher: PreloadLauncher, tree: Path) -> None:
    outcome, lines = run(launcher, tree, "interleave")
    assert outcome.launch["mode"] == FORKED_MODE
    expected = [f"{stream} {i}" for i in range(5) for stream in ("out", "err")]
    assert lines == [*expected, "no newline at the end"]


@pytest.mark.parametrize(
    ("args", "code", "failure"),
    [
        (("exit", "0"), 0, None),
        (("exit", "3"), 3, "exited with code 3"),
        (("message",), 1, "exited with code 1"),
        (("raise",), 1, "exited with code 1"),
        (("kill", str(int(signal.SIGKILL))), -9, "killed by SIGKILL (out of memory?)"),
        (("kill", str(int(signal.SIGSEGV))), -11, "killed by SIGSEGV (segmentation fault)"),
    ],
)
def test_exit_status_reaches_the_runner_as_a_subprocess_would(
    launcher: PreloadLauncher, tree: Path, args: tuple[str, ...], code: int, failure: str | None
) -> None:
    forked, forked_lines = run(launcher, tree, *args)
    fresh, fresh_lines = run(SubprocessLauncher(), tree, *args)
    assert forked.launch["mode"] == FORKED_MODE
    assert (forked.exit_code, forked.failure) == (fresh.exit_code, fresh.failure) == (code, failure)
    if args[0] == "raise":
        assert "Traceback (most recent call last):" in forked_lines
        assert forked_lines[-1] == fresh_lines[-1] == "ValueError: boom from the benchmark"
    if args[0] == "message":
        assert forked_lines == fresh_lines == ["a message for stderr"]


@pytest.mark.parametrize("code", [0, 4])
def test_a_run_ends_as_python_ends_it(launcher: PreloadLauncher, tree: Path, code: int) -> None:
    # The child skips the interpreter's finalization, nothing else: threads are waited for,
    # atexit handlers run, Python's buffers and C's stdio are flushed.
    forked, forked_lines = run(launcher, tree, "ending", str(code), env=job_env(PYTHONUNBUFFERED="0"))
    fresh, fresh_lines = run(
        SubprocessLauncher(), tree, "ending", str(code), env=job_env(PYTHONUNBUFFERED="0")
    )
    assert forked.launch["mode"] == FORKED_MODE
    assert forked.exit_code == fresh.exit_code == code
    assert sorted(forked_lines) == sorted(fresh_lines)
    assert {"thread done", "pool ran", "atexit ran", "from C", "left in the buffer"} <= set(forked_lines)


def test_a_timeout_kills_the_whole_process_group(launcher: PreloadLauncher, tree: Path) -> None:
    started = time.monotonic()
    outcome, lines = run(launcher, tree, "hang", timeout_s=1.5)
    assert time.monotonic() - started < 30  # ended at its timeout, not after the child's 60 s sleep
    assert outcome.launch["mode"] == FORKED_MODE
    assert outcome.timed_out
    assert outcome.failure == "timed out after 1.5 s"
    assert outcome.exit_code == -signal.SIGTERM
    leader, worker = json.loads(next(line for line in lines if line.startswith("PIDS "))[5:])
    assert gone(leader)
    assert gone(worker)
    assert not group_alive(leader)


def test_cancel_stops_a_forked_run(launcher: PreloadLauncher, tree: Path) -> None:
    cancel = threading.Event()
    output: list[str] = []

    def cancel_once_running() -> None:
        wait_until(lambda: any(line.startswith("PIDS ") for line in list(output)), 30, "the child to start")
        cancel.set()

    canceller = threading.Thread(target=cancel_once_running, daemon=True)
    canceller.start()
    outcome, lines = run(launcher, tree, "hang", cancel=cancel, lines=output)
    canceller.join(timeout=30)
    assert outcome.failure == CANCELLED
    assert all(gone(pid) for pid in json.loads(next(x for x in lines if x.startswith("PIDS "))[5:]))


@pytest.mark.parametrize(
    ("argv", "env", "why"),
    [
        ([PYTHON, "probe_bench.py", "exit", "0"], None, "is not"),
        ([PYTHON, "-u", "-m", "probe_bench", "exit", "0"], None, "is not"),
        (["python3-elsewhere", "-m", "probe_bench", "exit", "0"], None, "is not"),
        (None, job_env(OMP_NUM_THREADS="7"), "differs from the preloaded interpreter's in OMP_NUM_THREADS"),
        (None, job_env(PYTHONHASHSEED="3"), "in PYTHONHASHSEED"),
    ],
)
def test_runs_that_cannot_be_forked_start_as_subprocesses(
    launcher: PreloadLauncher, tree: Path, argv: list[str] | None, env: dict[str, str] | None, why: str
) -> None:
    first, _ = run(launcher, tree, "exit", "0")  # starts the zygote with the plain job environment
    assert first.launch["mode"] == FORKED_MODE
    if argv is not None and argv[0] != PYTHON:
        argv = [PYTHON, "-c", "import sys; sys.exit(0)"]  # same refusal, but a command that exists
        assert module_command(argv, PYTHON) is None
    outcome, _ = run(launcher, tree, env=env, argv=argv or [PYTHON, "-m", "probe_bench", "exit", "0"])
    assert outcome.exit_code == 0
    assert outcome.launch["mode"] == "subprocess"
    assert why in outcome.launch["preload_skipped"]


def test_a_module_on_the_jobs_path_that_shadows_a_preload_falls_back(
    launcher: PreloadLauncher, tree: Path
) -> None:
    (tree / "decimal.py").write_text("", encoding="utf-8")
    outcome, _ = run(launcher, tree, "exit", "0")
    assert outcome.launch["mode"] == "subprocess"
    assert "'decimal'" in outcome.launch["preload_skipped"]


def test_refusal_is_a_pure_decision(tmp_path: Path) -> None:
    env = {"TORCH_LOGS": "graph_breaks", "PYTHONPATH": "/a", "HOME": "/root"}
    assert import_sensitive(env) == {"TORCH_LOGS": "graph_breaks"}  # PYTHONPATH is rebuilt in the child
    argv = [PYTHON, "-m", "mod", "--flag"]
    assert module_command(argv, PYTHON) == ("mod", ["--flag"])
    same = {**env, "PYTHONPATH": "/b", "HOME": "/elsewhere"}
    assert refusal(argv, same, tmp_path, python=PYTHON, zygote_env=env, modules=PRELOAD) is None
    assert refusal(argv, env, tmp_path, python=PYTHON, zygote_env=None, modules=PRELOAD) is None
    other = {**env, "LD_PRELOAD": "x.so"}
    assert "LD_PRELOAD" in (refusal(argv, other, tmp_path, python=PYTHON, zygote_env=env, modules=()) or "")


def test_the_zygote_is_restarted_once_after_it_is_killed(launcher: PreloadLauncher, tree: Path) -> None:
    first, _ = run(launcher, tree, "exit", "0")
    assert first.launch["mode"] == FORKED_MODE
    killed = launcher.server_pid
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: gone(killed), 30, "the killed zygote to be gone")
    outcome, lines = run(launcher, tree, "show")
    assert outcome.exit_code == 0
    assert outcome.launch["mode"] == FORKED_MODE
    assert launcher.server_pid not in (None, killed)
    assert seen(lines)["env"]["PROBE_VAR"] == "from-job"


def test_a_zygote_killed_mid_run_ends_the_run(launcher: PreloadLauncher, tree: Path) -> None:
    result: list[tuple[ProcessOutcome, list[str]]] = []
    output: list[str] = []
    runner = threading.Thread(
        target=lambda: result.append(run(launcher, tree, "hang", timeout_s=30, lines=output))
    )
    runner.start()
    # The child is running (it printed its pids) before the zygote is killed, however slow the start.
    wait_until(lambda: any(line.startswith("PIDS ") for line in list(output)), 30, "the child to start")
    server = launcher.server_pid
    assert server is not None
    os.kill(server, signal.SIGKILL)
    runner.join(timeout=15)
    outcome, lines = result[0]
    assert outcome.exit_code == -signal.SIGKILL  # its real status is lost with the zygote
    assert all(gone(pid) for pid in json.loads(next(x for x in lines if x.startswith("PIDS "))[5:]))


def test_a_zygote_that_cannot_start_turns_preloading_off(tree: Path) -> None:
    broken = PreloadLauncher(("json", "no_such_module_anywhere"), start_timeout_s=30.0)
    try:
        first, _ = run(broken, tree, "exit", "3")
        second, _ = run(broken, tree, "exit", "0")
    finally:
        broken.close()
    assert first.exit_code == 3
    assert second.exit_code == 0
    for outcome in (first, second):
        assert outcome.launch["mode"] == "subprocess"
        assert "no_such_module_anywhere" in outcome.launch["preload_skipped"]
    assert broken.server_pid is None


def test_close_leaves_no_process_behind(tree: Path) -> None:
    # Children this test process had already (another test's session-wide server) are not ours.
    before = set(_children_of(os.getpid()))
    preload = PreloadLauncher(PRELOAD)
    outcomes = [run(preload, tree, "exit", str(code))[0] for code in (0, 2)]
    assert [o.exit_code for o in outcomes] == [0, 2]
    server = preload.server_pid
    assert server is not None
    preload.close()
    assert gone(server)
    leftovers = [pid for pid in _children_of(os.getpid()) if pid not in before and not gone(pid)]
    assert leftovers == []
    preload.close()  # twice is harmless


def _children_of(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == parent:
                pids.append(int(entry.name))
    return pids


def test_the_workload_records_how_its_process_started(launcher: PreloadLauncher, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    workload = SglangWorkload(
        generate_executable=(PYTHON, "-m", "tests.fakes.fake_sglang", "generate"),
        base_env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)},
        probe=EnvironmentProbe(nvidia_smi=(str(tmp_path / "no-nvidia-smi"),)),
        probe_versions=False,
        cpu_sampler=None,
    )
    context = WorkloadContext(
        tree=tmp_path / "tree", job_dir=tmp_path / "job", candidate_sha=SHA, timeout_s=30, launcher=launcher
    )
    forked = workload.run(small_case(), context)
    fresh = workload.run(
        small_case(), WorkloadContext(tree=tmp_path / "tree", job_dir=tmp_path / "job2", candidate_sha=SHA)
    )
    assert forked.failure is None
    assert fresh.failure is None
    assert forked.environment["launch"]["mode"] == FORKED_MODE
    assert forked.environment["launch"]["preloaded"] == list(PRELOAD)
    assert fresh.environment["launch"] == {"mode": "subprocess"}
    assert forked.perf_dump_text == fresh.perf_dump_text
    # The same output, but for the clock in each record and the job's own directory.
    assert same_log(forked.log_text, "job") == same_log(fresh.log_text, "job2")


def same_log(text: str, job_dir: str) -> str:
    """A log with its records' timestamps and the job directory's name taken out."""
    untimed = re.sub(r"\[\d\d-\d\d \d\d:\d\d:\d\d\]", "[time]", text)
    return untimed.replace(f"/{job_dir}/", "/JOB/")
