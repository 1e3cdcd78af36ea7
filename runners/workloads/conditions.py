"""What else the machine did while a benchmark ran: load, CPU steal, other processes' CPU time.

A CPU benchmark measured beside a process that burns a core, or on a VM whose host steals cycles,
is slower for reasons that have nothing to do with the code under test. :class:`CpuSampler` reads
``/proc`` while the benchmark runs and reports, for the window in which the benchmark's process
group was alive:

* the load average before and after;
* CPU steal, from the ``steal`` column of ``/proc/stat`` (share of all CPU time);
* the CPU time of everything else: busy time of the whole machine (``/proc/stat``) minus the
  utime + stime (+ cutime + cstime, which is where the time of reaped children goes) of the
  benchmark's process group (``/proc/<pid>/stat``), in cores and as a share of the machine.

The runner's own threads (heartbeats, log pumping, this sampler) count as "other": they are the
light background every run has. Every probe tolerates failure; a broken ``/proc`` gives an
``error`` entry instead of numbers, never an exception.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# Sampling twice a second bounds what a group member that exits between samples takes with it,
# and costs the runner well under 1 % of a core (one read of /proc/<pid>/stat per process).
DEFAULT_INTERVAL_S = 0.5


class ProcReader(Protocol):
    """Where the sampler reads the kernel's counters; tests pass a fake."""

    def stat(self) -> str:
        """The text of ``/proc/stat``."""
        ...

    def loadavg(self) -> str:
        """The text of ``/proc/loadavg``."""
        ...

    def pids(self) -> Iterable[int]:
        """The ids of the processes alive now."""
        ...

    def pid_stat(self, pid: int) -> str | None:
        """The text of ``/proc/<pid>/stat``, ``None`` when the process is gone."""
        ...


@dataclass(frozen=True)
class LinuxProc:
    """The real ``/proc``."""

    root: Path = Path("/proc")

    def stat(self) -> str:
        """The text of ``/proc/stat``."""
        return (self.root / "stat").read_text()

    def loadavg(self) -> str:
        """The text of ``/proc/loadavg``."""
        return (self.root / "loadavg").read_text()

    def pids(self) -> Iterable[int]:
        """The ids of the processes alive now."""
        return [int(entry.name) for entry in self.root.iterdir() if entry.name.isdigit()]

    def pid_stat(self, pid: int) -> str | None:
        """The text of ``/proc/<pid>/stat``, ``None`` when the process is gone."""
        try:
            return (self.root / str(pid) / "stat").read_text()
        except OSError:
            return None


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate ``cpu`` line of ``/proc/stat``, in clock ticks summed over every CPU."""

    busy: int  # user + nice + system + irq + softirq (guest time is already inside user)
    steal: int
    total: int  # every column but guest and guest_nice
    cpu_count: int


@dataclass(frozen=True)
class ProcessTimes:
    """One process's line of ``/proc/<pid>/stat``: its group and its CPU time in clock ticks."""

    pid: int
    pgrp: int
    alive: bool  # not a zombie waiting to be reaped
    ticks: int  # utime + stime + cutime + cstime


def parse_cpu_times(text: str) -> CpuTimes:
    """The ``cpu`` line and the number of ``cpuN`` lines of ``/proc/stat``; ``ValueError`` if absent."""
    aggregate: list[int] | None = None
    cpus = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name == "cpu":
            aggregate = [int(value) for value in rest.split()]
        elif name.startswith("cpu") and name[3:].isdigit():
            cpus += 1
    if aggregate is None or len(aggregate) < 4:
        raise ValueError("/proc/stat has no cpu line")
    columns = (aggregate + [0] * 10)[:10]
    user, nice, system, idle, iowait, irq, softirq, steal = columns[:8]
    return CpuTimes(
        busy=user + nice + system + irq + softirq,
        steal=steal,
        total=user + nice + system + idle + iowait + irq + softirq + steal,
        cpu_count=max(cpus, 1),
    )


def parse_process_times(text: str) -> ProcessTimes | None:
    """``/proc/<pid>/stat`` (``pid (comm) state ppid pgrp ...``); ``None`` when unreadable."""
    try:
        pid = int(text.split(" ", 1)[0])
        # comm may hold spaces and parentheses: the fields start after the last ")".
        fields = text[text.rindex(")") + 2 :].split()
        return ProcessTimes(
            pid=pid,
            pgrp=int(fields[2]),
            alive=fields[0] not in ("Z", "X"),
            ticks=sum(int(value) for value in fields[11:15]),
        )
    except (ValueError, IndexError):
        return None


def parse_loadavg(text: str) -> list[float] | None:
    """The 1, 5 and 15 minute load averages."""
    try:
        return [float(value) for value in text.split()[:3]]
    except ValueError:
        return None


@dataclass(frozen=True)
class _Sample:
    at: float
    cpu: CpuTimes
    group_ticks: dict[int, int]  # the latest reading of every group member seen so far
    leader_alive: bool


def cpu_load_summary(first: CpuTimes, last: CpuTimes, group_ticks: int, window_s: float) -> dict[str, Any]:
    """Steal, the benchmark's and the other processes' CPU between two ``/proc/stat`` readings.

    Parameters
    ----------
    first, last
        ``/proc/stat`` at the start and the end of the window.
    group_ticks
        CPU ticks the benchmark's process group used in the window.
    window_s
        Wall time of the window, seconds.

    Returns
    -------
    dict
        ``steal_pct``, ``benchmark_cores``, ``other_cores``, ``other_share_pct``, ``busy_cores``.
    """
    total = last.total - first.total
    if total <= 0:
        raise ValueError("no CPU time passed between the samples")
    # Ticks of all CPUs / CPU count: the window's length in ticks, from the same counters.
    wall_ticks = total / last.cpu_count
    busy = max(last.busy - first.busy, 0)
    other = max(busy - group_ticks, 0)
    other_cores = other / wall_ticks
    return {
        "cpu_count": last.cpu_count,
        "window_s": round(window_s, 3),
        "steal_pct": round(max(last.steal - first.steal, 0) / total * 100.0, 2),
        "busy_cores": round(busy / wall_ticks, 3),
        "benchmark_cores": round(min(group_ticks, busy) / wall_ticks, 3),
        "other_cores": round(other_cores, 3),
        "other_share_pct": round(other_cores / last.cpu_count * 100.0, 1),
    }


@dataclass
class CpuSampler:
    """Samples ``/proc`` in a thread while one benchmark's process group runs.

    ``start()`` before the benchmark, ``attach(pgid)`` once it started, ``stop()`` after it ended:
    the result covers the samples from the first to the last one that saw the group leader alive.
    """

    reader: ProcReader = field(default_factory=LinuxProc)
    interval_s: float = DEFAULT_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    _pgid: int | None = None
    _samples: list[_Sample] = field(default_factory=list)
    _group: dict[int, int] = field(default_factory=dict)
    _error: str | None = None
    _loadavg_before: list[float] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        """Read the load average before the benchmark starts."""
        self._loadavg_before = self._loadavg()

    def attach(self, pgid: int) -> None:
        """Start sampling the benchmark's process group ``pgid`` (its leader's pid)."""
        with self._lock:
            self._pgid = pgid
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"cpu-sampler-{pgid}")
        self._thread.start()

    def sample(self) -> None:
        """Take one sample now (the thread calls this; tests call it by hand)."""
        with self._lock:
            if self._pgid is None or self._error is not None:
                return
            try:
                cpu = parse_cpu_times(self.reader.stat())
                leader_alive = False
                for pid in self.reader.pids():
                    text = self.reader.pid_stat(pid)
                    times = parse_process_times(text) if text else None
                    if times is None or times.pgrp != self._pgid:
                        continue
                    # A member's counters only grow; keep its last reading after it is gone.
                    self._group[pid] = max(times.ticks, self._group.get(pid, 0))
                    if pid == self._pgid and times.alive:
                        leader_alive = True
            except (OSError, ValueError) as error:
                self._error = f"cannot read /proc: {error}"
                return
            self._samples.append(_Sample(self.clock(), cpu, dict(self._group), leader_alive))

    def stop(self) -> dict[str, Any]:
        """Stop sampling; what the machine did during the benchmark (or why that is unknown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        result: dict[str, Any] = {"loadavg_before": self._loadavg_before, "loadavg_after": self._loadavg()}
        with self._lock:
            window = _window(self._samples)
            if self._error is not None:
                result["error"] = self._error
            elif window is None:
                result["error"] = "the benchmark ended before two samples of /proc were taken"
            else:
                first, last = window
                group = sum(last.group_ticks.values()) - sum(first.group_ticks.values())
                try:
                    result.update(cpu_load_summary(first.cpu, last.cpu, max(group, 0), last.at - first.at))
                except ValueError as error:
                    result["error"] = str(error)
                result["samples"] = len(self._samples)
        return result

    def _loop(self) -> None:
        # Quick samples first (50, 100, 200, 400 ms...), so a short run still has a window.
        wait = min(0.05, self.interval_s)
        while not self._stop.wait(wait):
            self.sample()
            wait = min(wait * 2, self.interval_s)

    def _loadavg(self) -> list[float] | None:
        try:
            return parse_loadavg(self.reader.loadavg())
        except OSError:
            return None


def _window(samples: list[_Sample]) -> tuple[_Sample, _Sample] | None:
    """The first sample and the last one that saw the leader alive: the time the benchmark ran."""
    alive = [sample for sample in samples if sample.leader_alive]
    if len(alive) < 2:
        return None
    return alive[0], alive[-1]
