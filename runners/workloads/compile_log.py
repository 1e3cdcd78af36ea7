"""Counting torch.compile graph breaks and recompiles from ``TORCH_LOGS=graph_breaks,recompiles`` output.

torch's log formatter prefixes *every* line of a record, for example::

    [rank0]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks] Graph break in user code at /src/model.py:102
    [rank0]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks] Graph Break Reason: ...
    V0920 13:54:44.535000 3904 torch/_dynamo/guards.py:4760] [0/1] [__recompiles] Recompiling function forward in /src/model.py:4
    W0903 18:41:46.000000 77 torch/_dynamo/convert_frame.py:1358] [0/8] torch._dynamo hit config.recompile_limit (8)

(``_internal.py``'s TorchLogsFormatter: rank, glog level and time, pid, file:line, compile id,
artifact.) An event is the record's first line; the lines after it (reason, traceback, guard
failures) are not events. With several GPUs every rank compiles the same graphs and logs the
same events, so an event is identified by its compile id and site, not by rank or pid: each
distinct event counts once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from runners.workloads.base import CompileCounters

_PREFIX = re.compile(
    r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d+ \d+ \S+:\d+\]"
    r"(?: \[(?P<compile_id>[^\]]*)\])?(?: \[__\w+\])? ?"
)
# torch >= 2.6 names the site on the first line; older releases say "Graph break: <reason> from
# user code at:" and put the frame on the next line. A repeat of a known break is logged as
# "Graph break (user stack suppressed due to duplicate graph break) in user code at ...".
_GRAPH_BREAK = re.compile(r"^Graph break\b(?P<rest>.*?\buser code at\b:?\s*(?P<site>\S*).*)$")
_RECOMPILE = re.compile(r"^Recompiling function (?P<function>\S+) in (?P<site>\S+)")
# "cache_size_limit" before torch 2.6.
_LIMIT = re.compile(r"torch\._dynamo hit config\.(?:recompile_limit|cache_size_limit) \((?P<limit>\d+)\)")


@dataclass
class CompileEventCounter:
    """Fed every output line of a run (also the ones a capped log drops); counts distinct events."""

    graph_break_sites: set[tuple[str, str]] = field(default_factory=set)
    recompile_sites: set[tuple[str, str]] = field(default_factory=set)
    limit_hits: set[tuple[str, str]] = field(default_factory=set)

    def feed(self, line: str) -> None:
        """Look at one output line."""
        if "raph break" not in line and "ecompil" not in line and "_dynamo hit" not in line:
            return  # the cheap test first: this runs on every line of a long log
        # Lines may still carry "\r" redraws of a progress bar they were glued to.
        text = line.rsplit("\r", 1)[-1]
        prefix = _PREFIX.match(text)
        compile_id = (prefix["compile_id"] or "") if prefix else ""
        message = text[prefix.end() :] if prefix else text.strip()
        if match := _GRAPH_BREAK.match(message):
            self.graph_break_sites.add((compile_id, match["site"] or match["rest"]))
        elif match := _RECOMPILE.match(message):
            self.recompile_sites.add((compile_id, f"{match['function']} {match['site']}"))
        elif match := _LIMIT.search(message):
            self.limit_hits.add((compile_id, match["limit"]))

    @property
    def graph_breaks(self) -> int:
        """Distinct graph breaks logged."""
        return len(self.graph_break_sites)

    @property
    def recompiles(self) -> int:
        """Distinct recompilations logged."""
        return len(self.recompile_sites)

    @property
    def recompile_limit_hits(self) -> int:
        """How often Dynamo gave a frame up after too many recompiles (it then runs eagerly)."""
        return len(self.limit_hits)

    @property
    def seen_any(self) -> bool:
        """Whether any compile event was logged."""
        return bool(self.graph_break_sites or self.recompile_sites or self.limit_hits)


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
