"""Output parsers: ``sglang generate`` logs, ``--perf-dump-path`` JSON and ``performance.log``.

Pure functions from text to the dataclasses in :mod:`runners.parsing.model`; the ``*_file``
helpers are the only ones that read files. :func:`clean_console_text` is the one cleaning of
captured console text (ANSI colour codes out) that every other reader of a log shares;
:func:`warmup_mark` tells a runner, line by line, where the warmup begins and ends.
"""

from __future__ import annotations

from runners.parsing._logtext import clean_console_text
from runners.parsing._requests import warmup_mark
from runners.parsing.combine import combine
from runners.parsing.model import MemoryCheckpoint, ParsedRun, ParseError, PerfDump, RunStatus, StageTiming
from runners.parsing.perf_dump import parse_perf_dump, parse_perf_dump_file
from runners.parsing.performance_log import parse_performance_log, parse_performance_log_file
from runners.parsing.sglang_log import parse_sglang_log, parse_sglang_log_file

__all__ = [
    "MemoryCheckpoint",
    "ParseError",
    "ParsedRun",
    "PerfDump",
    "RunStatus",
    "StageTiming",
    "clean_console_text",
    "combine",
    "parse_perf_dump",
    "parse_perf_dump_file",
    "parse_performance_log",
    "parse_performance_log_file",
    "parse_run",
    "parse_sglang_log",
    "parse_sglang_log_file",
    "warmup_mark",
]


def parse_run(log_text: str | None, perf_dump_text: str | None = None) -> ParsedRun:
    """Parse a run's log and/or perf dump and merge them (see :func:`combine`)."""
    if log_text is None and perf_dump_text is None:
        raise ParseError("nothing to parse: no log and no perf dump")
    log = parse_sglang_log(log_text) if log_text is not None else None
    dump = parse_perf_dump(perf_dump_text) if perf_dump_text is not None else None
    return combine(log, dump)
