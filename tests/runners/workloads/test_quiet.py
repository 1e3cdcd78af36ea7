"""Waiting for a quiet machine before a CPU benchmark: scripted /proc, injected clock and sleep."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from runners.workloads.quiet import SAMPLE_S, busy_cores, wait_for_quiet


class ScriptedProc:
    """``/proc/stat`` snapshots of a 2-CPU machine: busy and total ticks advancing as scripted."""

    def __init__(self, busy_per_sample: list[int]) -> None:
        self._busy = 0
        self._total = 0
        self._script = iter(busy_per_sample)
        self._second = False

    def stat(self) -> str:
        if self._second:
            self._busy += next(self._script)
            self._total += 20  # 2 CPUs x 10 ticks: one 0.1 s sample
        self._second = not self._second
        idle = self._total - self._busy
        return f"cpu  {self._busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n"

    def loadavg(self) -> str:
        return "0.00 0.00 0.00 1/100 1\n"

    def pids(self) -> Iterable[int]:
        return []

    def pid_stat(self, pid: int) -> str | None:
        return None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_busy_cores_reads_the_machine() -> None:
    clock = Clock()
    assert busy_cores(ScriptedProc([10]), sleep=clock.sleep) == 1.0  # one core of two busy


def test_a_quiet_machine_starts_at_once() -> None:
    clock = Clock()
    waited = wait_for_quiet(30, proc=ScriptedProc([2]), sleep=clock.sleep, clock=lambda: clock.now)
    assert waited.quiet
    assert waited.busy_cores is not None
    assert waited.busy_cores < 0.5
    assert waited.waited_s == SAMPLE_S == 0.1


def test_a_busy_stretch_is_waited_out() -> None:
    clock = Clock()
    waited = wait_for_quiet(30, proc=ScriptedProc([10, 10, 9, 1]), sleep=clock.sleep, clock=lambda: clock.now)
    assert waited.quiet
    assert waited.waited_s == pytest.approx(4 * SAMPLE_S + 3 * 1.0)


def test_a_machine_that_stays_busy_starts_at_the_limit() -> None:
    clock = Clock()
    waited = wait_for_quiet(5, proc=ScriptedProc([10] * 100), sleep=clock.sleep, clock=lambda: clock.now)
    assert not waited.quiet
    assert 5 <= waited.waited_s < 7


def test_an_unreadable_proc_does_not_hold_a_benchmark_back() -> None:
    class Broken(ScriptedProc):
        def stat(self) -> str:
            raise OSError("no /proc")

    waited = wait_for_quiet(30, proc=Broken([]))
    assert waited.quiet
    assert waited.busy_cores is None
