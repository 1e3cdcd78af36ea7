"""Graph breaks as ``TORCH_LOGS=graph_breaks`` prints them: where each one is and why (pure).

torch 2.x logs one record per graph break, every line prefixed by its formatter::

    V1202 02:32:18.086000 9246 torch/_dynamo/symbolic_convert.py:5124] [3/0] [__graph_breaks] Graph break in user code at /src/toydit/norm.py:19
    V1202 ... [3/0] [__graph_breaks] Graph Break Reason: Encountered graph break when attempting to trace CALL: ...
    V1202 ... [3/0] [__graph_breaks]
    V1202 ... [3/0] [__graph_breaks] Skip calling `torch.compiler.disable()`d function
    V1202 ... [3/0] [__graph_breaks]   Explanation: Skip calling function `<function fused_layer_norm at 0x7f...>` since ...

(torch < 2.6: ``Graph break: <reason> from user code at:`` and the frame on the next line.) A
break is named by its site (``file:line``, the file shortened to its package path) and its reason
(the specific headline torch gives after the generic one, object addresses removed), so the same
break in two runs compares equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_PREFIX = re.compile(
    r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d+ \d+ \S+:\d+\](?: \[[^\]]*\])? \[__graph_breaks\] ?"
)
_NEW_STYLE = re.compile(r"^Graph break\b.*?\buser code at (?P<path>\S+?):(?P<line>\d+)\s*$")
_OLD_STYLE = re.compile(r"^Graph break: (?P<reason>.*?) from user code at:\s*$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_REASON = re.compile(r"^Graph Break Reason: (?P<reason>.*)$")
_EXPLANATION = re.compile(r"^\s*Explanation: (?P<text>.*)$")
_ADDRESS = re.compile(r"<(function|built-in function|method|bound method|class) (\S+) at 0x[0-9a-fA-F]+>")
_HEX = re.compile(r" at 0x[0-9a-fA-F]+")
# The generic first lines of a reason, before the specific one torch adds on a later line.
_GENERIC = ("Failed to handle graph break gracefully", "Encountered graph break when attempting to trace")
MAX_REASON = 300


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


def short_path(path: str) -> str:
    """The path from its package on: after ``site-packages/``, else its last two parts."""
    if "site-packages/" in path:
        return path.rsplit("site-packages/", 1)[1]
    parts = [part for part in path.split("/") if part]
    return "/".join(parts[-2:]) if parts else path


def _clean(text: str) -> str:
    text = _ADDRESS.sub(lambda match: match.group(2), text)
    return _HEX.sub("", text).strip()[:MAX_REASON]


@dataclass
class _Record:
    site: str
    lines: list[str]

    def finish(self) -> GraphBreak:
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


def reason_is_specific(line: str) -> bool:
    """Whether a reason's continuation line is a detail (indented, or a separator), not a headline."""
    return line.startswith((" ", "***"))


def parse_graph_breaks(lines: Iterable[str]) -> list[GraphBreak]:
    """Every graph break record in a log, in order (a break logged twice appears twice)."""
    found: list[GraphBreak] = []
    record: _Record | None = None
    pending_old: str | None = None  # an old-style record waits for its frame line
    for raw in lines:
        prefix = _PREFIX.match(raw.rstrip("\n").rsplit("\r", 1)[-1])
        if prefix is None:
            continue
        message = raw.rstrip("\n").rsplit("\r", 1)[-1][prefix.end() :]
        if pending_old is not None and (frame := _FRAME.match(message)):
            found.append(GraphBreak(f"{short_path(frame['path'])}:{frame['line']}", _clean(pending_old)))
            pending_old = None
            continue
        new, old = _NEW_STYLE.match(message), _OLD_STYLE.match(message)
        if new is not None or old is not None:
            if record is not None:
                found.append(record.finish())
            record = None
            if new is not None:
                record = _Record(f"{short_path(new['path'])}:{new['line']}", [])
            elif old is not None:
                pending_old = old["reason"]
            continue
        if record is not None:
            record.lines.append(message)
    if record is not None:
        found.append(record.finish())
    return found


def distinct_breaks(breaks: Iterable[GraphBreak]) -> list[GraphBreak]:
    """The breaks of a run, each site and reason once, in the order first seen."""
    seen: dict[tuple[str, str], GraphBreak] = {}
    for item in breaks:
        seen.setdefault(item.key, item)
    return list(seen.values())


def new_breaks(before: Iterable[GraphBreak], after: Iterable[GraphBreak]) -> list[GraphBreak]:
    """The breaks of ``after`` (distinct) that ``before`` does not have."""
    known = {item.key for item in before}
    return [item for item in distinct_breaks(after) if item.key not in known]
