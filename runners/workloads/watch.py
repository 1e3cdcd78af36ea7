"""Watchers of one benchmark run: what else the machine did meanwhile, and where each output line goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from runners.workloads.base import WorkloadContext
from runners.workloads.conditions import CpuSampler
from runners.workloads.environment import EnvironmentProbe


class RunConditions:
    """What else the machine did during one run: GPU clocks and throttling before it, CPU use while it
    ran, both again after it. Every probe tolerates failure; a broken one leaves an ``error``."""

    def __init__(
        self,
        probe: EnvironmentProbe | None,
        cpu_sampler: Callable[[], CpuSampler] | None,
        context: WorkloadContext,
    ) -> None:
        self._probe = probe
        self._context = context
        self._gpu_before = self._gpus()
        self._sampler: CpuSampler | None = None
        if probe is not None and cpu_sampler is not None:
            self._sampler = cpu_sampler()
            self._sampler.start()

    def started(self, pgid: int) -> None:
        """The benchmark started as process group ``pgid``: sample it, and tell the agent."""
        if self._sampler is not None:
            try:
                self._sampler.attach(pgid)
            except Exception:  # a sampler that cannot start must not stop the benchmark
                self._sampler = None
        if self._context.on_start is not None:
            self._context.on_start(pgid)

    def record(self, environment: dict[str, Any]) -> None:
        """Stop sampling; put the conditions into ``environment["conditions"]``."""
        if self._probe is None:
            return
        conditions: dict[str, Any] = {}
        if self._sampler is not None:
            try:
                conditions["cpu"] = self._sampler.stop()
            except Exception as error:
                conditions["cpu"] = {"error": f"{type(error).__name__}: {error}"}
        if self._context.gpu_ids:
            before, after = self._gpu_before, self._gpus()
            if isinstance(before, str):
                conditions["gpu"] = {"error": f"before the run: {before}"}
            elif isinstance(after, str):
                conditions["gpu"] = {"error": f"after the run: {after}"}
            else:
                conditions["gpu"] = {"before": before, "after": after}
        environment["conditions"] = conditions

    def _gpus(self) -> list[dict[str, Any]] | str:
        if self._probe is None or not self._context.gpu_ids:
            return []
        return self._probe.gpu_conditions(self._context.gpu_ids)


class Tee:
    """Feeds every output line to the run's own readers (the compile counter, the phase clock) and
    to the caller's progress display.

    A failing display is switched off; it must not stop the counting or the log.
    """

    def __init__(
        self, readers: Sequence[Callable[[str], None]], display: Callable[[str], None] | None
    ) -> None:
        self._readers = tuple(readers)
        self._display = display

    def __call__(self, line: str) -> None:
        for read in self._readers:
            read(line)
        if self._display is not None:
            try:
                self._display(line)
            except Exception:
                self._display = None
