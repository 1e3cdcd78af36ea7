"""Counting torch.compile graph breaks and recompiles from ``TORCH_LOGS=graph_breaks,recompiles`` output.

Each line is read by :func:`wire.torch_logs.compile_event`, the one reader of torch's log records
(the tracker names an evidence run's graph breaks with it). With several GPUs every rank compiles
the same graphs and logs the same events, so an event is identified by its compile id and subject
(a graph break's site, a recompile's function and site), not by rank or pid: each distinct event
counts once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runners.workloads.base import CompileCounters
from wire.torch_logs import CompileEventKind, compile_event


@dataclass
class CompileEventCounter:
    """Fed every output line of a run (also the ones a capped log drops); counts distinct events."""

    seen: dict[CompileEventKind, set[tuple[str, str]]] = field(
        default_factory=lambda: {kind: set() for kind in CompileEventKind}
    )

    def feed(self, line: str) -> None:
        """Look at one output line."""
        if (event := compile_event(line)) is not None:
            # An old-style graph break names its site on the next line: its first line stands in.
            self.seen[event.kind].add((event.compile_id, event.subject or event.message))

    @property
    def graph_breaks(self) -> int:
        """Distinct graph breaks logged."""
        return len(self.seen[CompileEventKind.GRAPH_BREAK])

    @property
    def recompiles(self) -> int:
        """Distinct recompilations logged."""
        return len(self.seen[CompileEventKind.RECOMPILE])

    @property
    def recompile_limit_hits(self) -> int:
        """How often Dynamo gave a frame up after too many recompiles (it then runs eagerly)."""
        return len(self.seen[CompileEventKind.RECOMPILE_LIMIT])

    @property
    def seen_any(self) -> bool:
        """Whether any compile event was logged."""
        return any(self.seen.values())


_DUMP_FIELDS = ("graph_breaks", "recompiles", "unique_graphs", "frames_compiled")


def dump_counters(perf_dump_text: str | None) -> dict[str, int]:
    """The ``"dynamo_counters"`` object of a perf dump (non-negative integers only), if it has one."""
    if not perf_dump_text:
        return {}
    try:
        data: Any = json.loads(perf_dump_text)
    except ValueError:
        return {}  # the parser reports a broken dump; the counters simply stay unknown
    counters = data.get("dynamo_counters") if isinstance(data, dict) else None
    if not isinstance(counters, dict):
        return {}
    return {
        name: value
        for name, value in counters.items()
        if name in _DUMP_FIELDS and isinstance(value, int) and not isinstance(value, bool) and value >= 0
    }


def compile_counters(
    counter: CompileEventCounter, perf_dump_text: str | None, *, compile_enabled: bool
) -> CompileCounters:
    """The run's counters: the dump's ``dynamo_counters`` where present, else what the log showed.

    Log counts are reported only when the case compiles or an event was seen: zero graph breaks
    from a run that never called torch.compile says nothing.
    """
    from_dump = dump_counters(perf_dump_text)
    trust_log = compile_enabled or counter.seen_any
    return CompileCounters(
        graph_breaks=from_dump.get("graph_breaks", counter.graph_breaks if trust_log else None),
        recompiles=from_dump.get("recompiles", counter.recompiles if trust_log else None),
        unique_graphs=from_dump.get("unique_graphs"),
        frames_compiled=from_dump.get("frames_compiled"),
    )
