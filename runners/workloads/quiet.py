"""Wait for a quiet machine before a CPU benchmark starts, instead of measuring beside a busy one.

A run measured while other processes take CPU is flagged by the tracker and run again
(``tracker/ingest/conditions.py``). On a machine whose load comes and goes (a neighbour's build, a test run,
a process that burns a core for a while), it is cheaper and surer to look first: sample the
machine's busy time for a moment, and while other processes keep at least :data:`BUSY_CORES` busy,
wait a little and look again, up to a limit. The benchmark then starts at the beginning of a quiet
stretch rather than in the middle of a busy one. GPU hosts share their CPUs between runners of
different GPUs by design and do not wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from runners.workloads.conditions import LinuxProc, ProcReader, parse_cpu_times

# The tracker flags a CPU run when other processes took at least half a core (and a quarter of the
# machine): starting only below that keeps a run that begins quiet from being flagged at its start.
BUSY_CORES = 0.5
# Every job looks once, quiet or not: a tenth of a second (20 clock ticks on two cores, where a
# neighbour on a whole core shows as 10) costs the demo's jobs little (a quarter of a second was
# a tenth of a toy job's wall time, docs/demo.md).
SAMPLE_S = 0.1
RETRY_S = 1.0


@dataclass(frozen=True)
class QuietWait:
    """How long the runner waited, and how busy the machine was at its last look (cores)."""

    waited_s: float
    busy_cores: float | None
    quiet: bool


def busy_cores(
    proc: ProcReader, *, sample_s: float = SAMPLE_S, sleep: Callable[[float], None] = time.sleep
) -> float:
    """Cores the whole machine kept busy over ``sample_s`` (the runner itself is idle meanwhile)."""
    first = parse_cpu_times(proc.stat())
    sleep(sample_s)
    second = parse_cpu_times(proc.stat())
    total = second.total - first.total
    if total <= 0:
        return 0.0
    return (second.busy - first.busy) / total * second.cpu_count


def wait_for_quiet(
    max_wait_s: float,
    *,
    proc: ProcReader | None = None,
    sample_s: float = SAMPLE_S,
    retry_s: float = RETRY_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    stop: Callable[[], bool] = lambda: False,
) -> QuietWait:
    """Return once fewer than :data:`BUSY_CORES` cores are busy, or after ``max_wait_s``.

    A broken ``/proc`` does not hold a benchmark back: it returns at once, ``busy_cores=None``.
    """
    reader = proc or LinuxProc()
    started = clock()
    busy: float | None = None
    while True:
        try:
            busy = busy_cores(reader, sample_s=sample_s, sleep=sleep)
        except (OSError, ValueError):
            return QuietWait(waited_s=clock() - started, busy_cores=None, quiet=True)
        waited = clock() - started
        if busy < BUSY_CORES:
            return QuietWait(waited_s=waited, busy_cores=busy, quiet=True)
        if waited >= max_wait_s or stop():
            return QuietWait(waited_s=waited, busy_cores=busy, quiet=False)
        sleep(retry_s)
