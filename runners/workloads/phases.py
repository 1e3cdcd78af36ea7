"""Where a benchmark process's wall time goes: starting up, the compile warmup, and the rest.

The runner stamps, on its own monotonic clock, the moment the process started, the moments its
log said the warmup began and ended (sglang's warmup lines, which the toy prints too:
:func:`runners.parsing.warmup_mark`) and the moment the process ended. From these:

* ``startup_s``: from the start to the warmup (interpreter, imports, model load: what a
  preloaded interpreter or a warm server saves);
* ``warmup_s``: the warmup request (torch.compile's compile, the first request's caches);
* ``after_warmup_s``: the measured request, saving its output and the process's exit;
* ``process_s``: all of it.

A run without warmup lines has only ``process_s``. The figures go to the run's environment
(``environment["timings"]``), where the agent adds its own (build, quiet wait): the tracker stores
them with the run, and ``perftrack demo`` sums them up at its end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runners.parsing import warmup_mark


@dataclass
class ProcessPhases:
    """Stamps one benchmark process's start, warmup and end as its output lines arrive."""

    clock: Callable[[], float] = time.monotonic
    _started: float | None = field(default=None, init=False)
    _warmup_began: float | None = field(default=None, init=False)
    _warmup_ended: float | None = field(default=None, init=False)
    _ended: float | None = field(default=None, init=False)

    def started(self) -> None:
        """The process has just started."""
        self._started = self.clock()

    def feed(self, line: str) -> None:
        """One output line, as it arrives (the first warmup's start and end are kept)."""
        mark = warmup_mark(line)
        if mark == "start" and self._warmup_began is None:
            self._warmup_began = self.clock()
        elif mark == "done" and self._warmup_began is not None and self._warmup_ended is None:
            self._warmup_ended = self.clock()

    def ended(self) -> None:
        """The process has ended (the first call counts)."""
        if self._ended is None:
            self._ended = self.clock()

    def timings(self) -> dict[str, float]:
        """Seconds per phase (see the module's docstring); empty if the process never started."""
        start, end = self._started, self._ended
        if start is None or end is None:
            return {}
        spans = {"process_s": end - start}
        began, done = self._warmup_began, self._warmup_ended
        if began is not None and done is not None:
            spans.update(startup_s=began - start, warmup_s=done - began, after_warmup_s=end - done)
        return {name: round(max(value, 0.0), 3) for name, value in spans.items()}
