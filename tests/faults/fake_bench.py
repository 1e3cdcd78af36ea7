#!/usr/bin/env python3
"""A misbehaving benchmark for the fault tests: ``fake_bench.py generate [sglang flags...]``.

Its ``--help`` is the fake sglang's (the runner asks each build for its options before running it).

``FAULT_BENCH`` picks the behaviour; every one ends like ``tests/fakes/fake_sglang.py``'s ``ok``
(a recorded sglang log and perf dump) unless it says otherwise:

``ok``
    the recorded run, after ``FAULT_BENCH_SLEEP_S`` seconds (default 0) of progress lines.
``flood``
    ``FAULT_BENCH_FLOOD_MB`` megabytes (default 64) of log lines before the recorded run.
``garbage``
    binary noise (NUL bytes, invalid UTF-8, no newlines for long stretches), then exit 0.
``garbage_then_ok``
    the same noise, then the recorded run.
``silent``
    prints nothing, exits 0.
``chatter``
    prints a start-up banner but no timing line at all, exits 0.
``no_timing``
    a recorded sglang log that ends without any timing line, exit 0.
``oom``
    allocates ``FAULT_BENCH_ALLOC_MB`` (default 64) and is then killed with SIGKILL, the way the
    kernel's OOM killer ends a process.

``FAULT_BENCH_STARTED``: a file that receives this process's pid as soon as it runs.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import sglang_cli  # noqa: E402
from tests.fakes.fake_sglang import generate as replay_generate  # noqa: E402


def noise(size: int, seed: int = 7) -> bytes:
    """Bytes that are no text: NULs, lone continuation bytes, a few newlines."""
    rng = random.Random(seed)
    data = bytearray(rng.getrandbits(8) for _ in range(size))
    data[::97] = b"\x00" * len(data[::97])
    data[1::131] = b"\xff" * len(data[1::131])
    return bytes(data)


def flood(megabytes: int) -> None:
    line = (b"flood " + b"x" * 8000 + b"\n") * 8  # about 64 KiB per write
    out = sys.stdout.buffer
    for _ in range(max(megabytes * 1024 * 1024 // len(line), 1)):
        out.write(line)
    out.flush()


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        # The runner asks every build for its options first: the faults are the benchmark's, the
        # command line is sglang's own.
        sglang_cli.parse_or_exit(argv[1], argv[2:])
    started = os.environ.get("FAULT_BENCH_STARTED")
    if started:
        Path(started).write_text(f"{os.getpid()}\n")
    scenario = os.environ.get("FAULT_BENCH", "ok")
    args = argv[2:]  # after the script and its "generate"
    if scenario == "silent":
        return 0
    if scenario == "chatter":
        print("Loading required modules: ['transformer']", flush=True)
        print("Scheduler bind at endpoint: tcp://127.0.0.1:5599", flush=True)
        return 0
    if scenario == "no_timing":
        return replay_generate(args, "no_timing")
    if scenario == "oom":
        hog = bytearray(int(os.environ.get("FAULT_BENCH_ALLOC_MB", "64")) * 1024 * 1024)
        hog[::4096] = b"\x01" * len(hog[::4096])  # touch every page: resident, not just reserved
        print(f"allocated {len(hog) // (1024 * 1024)} MiB", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario in ("garbage", "garbage_then_ok"):
        sys.stdout.buffer.write(noise(256 * 1024) + b"\n")
        sys.stdout.buffer.flush()
        if scenario == "garbage":
            return 0
    if scenario == "flood":
        flood(int(os.environ.get("FAULT_BENCH_FLOOD_MB", "64")))
    pause = float(os.environ.get("FAULT_BENCH_SLEEP_S", "0"))
    deadline = time.monotonic() + pause
    heard = True
    while time.monotonic() < deadline:
        if heard:
            try:
                print("fake_bench: warming up", flush=True)
            except BrokenPipeError:
                # Nobody reads the output any more (the runner died). Like a GPU worker between
                # two prints, keep running: that is the orphan a restarted runner must reap.
                heard = False
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))
    return replay_generate(args, "ok")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
