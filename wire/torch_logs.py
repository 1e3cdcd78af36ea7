"""torch.compile's records in a run's log (``TORCH_LOGS=graph_breaks,recompiles``), read once (pure).

A runner counts them into a result's :class:`wire.results.CompileCounters`; the tracker names the
graph breaks of an evidence run from the log the runner uploaded. torch's log formatter
(``torch/_logging/_internal.py``'s TorchLogsFormatter) prefixes *every* line of a record with the
same text: rank, glog level and time, pid, ``file:line]``, compile id, artifact::

    [rank0]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks] Graph break in user code at /src/model.py:102
    [rank0]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks] Graph Break Reason: ...
    V0920 13:54:44.535000 3904 torch/_dynamo/guards.py:4760] [0/1] [__recompiles] Recompiling function forward in /src/model.py:4
    W0903 18:41:46.000000 77 torch/_dynamo/convert_frame.py:1358] [0/8] torch._dynamo hit config.recompile_limit (8)

An event is a record's first line (:func:`compile_event`); the lines after it (reason,
explanation, traceback, guard failures) carry the same prefix, which is how a record's lines are
told apart from another rank's interleaved with them. A logger without torch's formatter prints
the same text unprefixed, and is read too. torch >= 2.6 names a graph break's site on its first
line; older releases say ``Graph break: <reason> from user code at:`` and put the frame on the next
line. A graph break (:func:`parse_graph_breaks`) is named by its site (``file:line``, the file
shortened to its package path) and its reason (the specific headline torch gives after the generic
one, object addresses removed), so the same break in two runs compares equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

_PREFIX = re.compile(
    r"^(?P<prefix>(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d+ \d+ \S+:\d+\]"
    r"(?: \[(?P<compile_id>(?!__)[^\]]*)\])?(?: \[__\w+\])?) ?"
)
# A repeat of a known break is logged as "Graph break (user stack suppressed due to duplicate
# graph break) in user code at ...": the site is what identifies it.
_GRAPH_BREAK = re.compile(r"^Graph break\b.*?\buser code at\b:?\s*(?P<site>\S*)")
_OLD_STYLE = re.compile(r"^Graph break: (?P<reason>.*?) from user code at\b")
_RECOMPILE = re.compile(r"^Recompiling function (?P<function>\S+) in (?P<site>\S+)")
# "cache_size_limit" before torch 2.6.
_LIMIT = re.compile(r"torch\._dynamo hit config\.(?:recompile_limit|cache_size_limit) \((?P<limit>\d+)\)")
_SITE = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_REASON = re.compile(r"^Graph Break Reason: (?P<reason>.*)$")
_EXPLANATION = re.compile(r"^\s*Explanation: (?P<text>.*)$")
_ADDRESS = re.compile(r"<(function|built-in function|method|bound method|class) (\S+) at 0x[0-9a-fA-F]+>")
_HEX = re.compile(r" at 0x[0-9a-fA-F]+")
# The generic first lines of a reason, before the specific one torch adds on a later line.
_GENERIC = ("Failed to handle graph break gracefully", "Encountered graph break when attempting to trace")
MAX_REASON = 300


class CompileEventKind(StrEnum):
    """What a record says happened."""

    GRAPH_BREAK = "graph_break"
    RECOMPILE = "recompile"
    RECOMPILE_LIMIT = "recompile_limit"  # Dynamo gave a frame up (it then runs eagerly)


@dataclass(frozen=True)
class LogLine:
    """One output line, split after torch's prefix (``prefix`` empty: a line without one)."""

    prefix: str
    compile_id: str
    message: str


@dataclass(frozen=True)
class CompileEvent:
    """The first line of a record: ``subject`` is a graph break's site as logged (empty when torch
    < 2.6 puts it on the next line), a recompile's ``function site``, or a limit hit's limit."""

    kind: CompileEventKind
    compile_id: str
    subject: str
    message: str


@dataclass(frozen=True)
class GraphBreak:
    """One graph break: ``site`` is ``path:line`` (package path), ``reason`` torch's headline,
    ``explanation`` its explanation line (may be empty)."""

    site: str
    reason: str
    explanation: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What makes two breaks the same break."""
        return (self.site, self.reason)


def split_line(line: str) -> LogLine:
    """A line's prefix, compile id and message; progress-bar redraws (``\\r``) before it dropped."""
    text = line.rstrip("\r\n").rsplit("\r", 1)[-1]
    match = _PREFIX.match(text)
    if match is None:
        return LogLine("", "", text)
    return LogLine(match["prefix"], match["compile_id"] or "", text[match.end() :])


def compile_event(line: str) -> CompileEvent | None:
    """The event a line starts, if it starts one."""
    return _event(split_line(line)) if _may_start_event(line) else None


def _may_start_event(line: str) -> bool:
    # The cheap test first: a runner looks at every line of a long log.
    return "raph break" in line or "ecompil" in line or "_dynamo hit" in line


def _event(line: LogLine) -> CompileEvent | None:
    message = line.message if line.prefix else line.message.strip()
    if match := _GRAPH_BREAK.match(message):
        return CompileEvent(CompileEventKind.GRAPH_BREAK, line.compile_id, match["site"], message)
    if match := _RECOMPILE.match(message):
        subject = f"{match['function']} {match['site']}"
        return CompileEvent(CompileEventKind.RECOMPILE, line.compile_id, subject, message)
    if match := _LIMIT.search(message):
        return CompileEvent(CompileEventKind.RECOMPILE_LIMIT, line.compile_id, match["limit"], message)
    return None


def short_path(path: str) -> str:
    """The path from its package on: after ``site-packages/``, else its last two parts."""
    if "site-packages/" in path:
        return path.rsplit("site-packages/", 1)[1]
    parts = [part for part in path.split("/") if part]
    return "/".join(parts[-2:]) if parts else path


def short_site(site: str) -> str:
    """``path:line`` with the path shortened (:func:`short_path`)."""
    match = _SITE.match(site)
    return f"{short_path(match['path'])}:{match['line']}" if match else short_path(site)


def reason_is_specific(line: str) -> bool:
    """Whether a reason's continuation line is a detail (indented, or a separator), not a headline."""
    return line.startswith((" ", "***"))


def _clean(text: str) -> str:
    text = _ADDRESS.sub(lambda match: match.group(2), text)
    return _HEX.sub("", text).strip()[:MAX_REASON]


@dataclass
class _Record:
    """A graph break's record while its lines come in."""

    site: str  # empty until an old-style record's frame line names it
    old_reason: str | None  # the reason on an old-style record's first line
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, event: CompileEvent) -> _Record:
        old = _OLD_STYLE.match(event.message)
        if event.subject:
            return cls(short_site(event.subject), old["reason"] if old else None)
        return cls("", old["reason"] if old else "")

    def add(self, message: str) -> None:
        if self.old_reason is None:
            self.lines.append(message)
        elif not self.site and (frame := _FRAME.match(message)):
            self.site = f"{short_path(frame['path'])}:{frame['line']}"

    def finish(self) -> GraphBreak | None:
        if not self.site:
            return None  # an old-style record whose frame line never came (a capped log): no site to name
        if self.old_reason is not None:
            return GraphBreak(self.site, _clean(self.old_reason))
        reason, explanation, generic = "", "", False
        for line in self.lines:
            if not line.strip():
                continue
            if match := _REASON.match(line):
                reason = match["reason"]
                generic = reason.startswith(_GENERIC)
            elif generic and not reason_is_specific(line):
                reason, generic = line.strip(), False
            elif not explanation and (match := _EXPLANATION.match(line)):
                explanation = match["text"]
            if reason and not generic and explanation:
                break
        return GraphBreak(site=self.site, reason=_clean(reason), explanation=_clean(explanation))


def parse_graph_breaks(lines: Iterable[str]) -> list[GraphBreak]:
    """Every graph break record in a log, in order (a break logged twice appears twice)."""
    records: list[_Record] = []
    open_records: dict[str, _Record] = {}  # by prefix: every line of a record carries its first's
    for raw in lines:
        line = split_line(raw)
        event = _event(line) if _may_start_event(line.message) else None
        if event is not None:
            open_records.pop(line.prefix, None)
            if event.kind is CompileEventKind.GRAPH_BREAK:
                open_records[line.prefix] = _Record.start(event)
                records.append(open_records[line.prefix])
        elif (record := open_records.get(line.prefix)) is not None:
            record.add(line.message)
    return [found for record in records if (found := record.finish()) is not None]
