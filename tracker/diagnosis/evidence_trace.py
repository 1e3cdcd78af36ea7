"""Operator self time per denoising step from a ``torch.profiler`` Chrome trace (pure).

A trace's complete events (``"ph": "X"``) nest on each thread: an operator's *self* time is its
duration minus the durations of its direct children on the same process and thread (what
``key_averages()`` calls self CPU time). GPU kernels run on their own streams and have no
children, so their self time is their duration. The profiled steps are the trace's
``ProfilerStep#N`` annotations; times are summed per operator name and divided by their number.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracker.errors import PerftrackError

OPERATOR_CATEGORIES = frozenset({"cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "user_annotation"})
STEP_PREFIX = "ProfilerStep#"
# A trace gzips ~10-20x (its names repeat); an upload holds at most 4 MiB of it. Unpacked beyond
# this it is not a profile of three steps but a gzip bomb, refused before it fills the memory.
MAX_TRACE_BYTES = 256 * 1024 * 1024
# Names that carry a run's own ids (compile ids, graph hashes): one name across runs.
_RENAMES = (
    (re.compile(r"^Torch-Compiled Region: \d+/\d+$"), "Torch-Compiled Region"),
    (re.compile(r"^## Call CompiledFxGraph \w+ ##$"), "CompiledFxGraph call"),
)


class TraceError(PerftrackError, ValueError):
    """The bytes are not a Chrome trace."""


@dataclass(frozen=True)
class Span:
    """One complete event: when it started and how long it lasted (µs), on which thread."""

    name: str
    category: str
    thread: tuple[Any, Any]  # (pid, tid)
    start_us: float
    duration_us: float


@dataclass(frozen=True)
class OperatorTimes:
    """Per operator name, self time per profiled step (ms), and how many steps were profiled."""

    per_step_ms: dict[str, float]
    steps: int


def read_trace(content: bytes) -> list[Span]:
    """The complete events of a Chrome trace, gzipped or not (:class:`TraceError` otherwise)."""
    if content[:2] == b"\x1f\x8b":
        content = _gunzip(content, MAX_TRACE_BYTES)
    try:
        document = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TraceError(f"not JSON: {error}") from None
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise TraceError("no traceEvents list")
    return [span for event in events if (span := _span(event)) is not None]


def _gunzip(content: bytes, limit: int) -> bytes:
    """``content`` unpacked, refused (:class:`TraceError`) when corrupt or over ``limit`` bytes."""
    unpacker = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)  # gzip framing
    try:
        unpacked = unpacker.decompress(content, limit + 1)
    except zlib.error as error:  # corrupt inside
        raise TraceError(f"not a gzip file: {error}") from None
    if len(unpacked) > limit:
        raise TraceError(f"over {limit // (1024 * 1024)} MiB unpacked")
    if not unpacker.eof:
        raise TraceError("not a gzip file: truncated")
    return unpacked


def _span(event: Any) -> Span | None:
    if not isinstance(event, Mapping) or event.get("ph") != "X":
        return None
    start, duration = event.get("ts"), event.get("dur")
    if not isinstance(start, int | float) or not isinstance(duration, int | float) or duration < 0:
        return None
    return Span(
        name=str(event.get("name", "")),
        category=str(event.get("cat", "")),
        thread=(event.get("pid"), event.get("tid")),
        start_us=float(start),
        duration_us=float(duration),
    )


def self_times_us(spans: Sequence[Span]) -> list[float]:
    """Each span's self time (µs), in the order given: duration minus its direct children's.

    Children are the spans that start inside it on the same thread; a child that outlasts its
    parent (clock rounding) counts only up to the parent's end.
    """
    own = [span.duration_us for span in spans]
    by_thread: dict[tuple[Any, Any], list[int]] = {}
    for index, span in enumerate(spans):
        by_thread.setdefault(span.thread, []).append(index)
    for indices in by_thread.values():
        indices.sort(key=lambda i: (spans[i].start_us, -spans[i].duration_us))
        stack: list[int] = []
        for index in indices:
            span = spans[index]
            while stack and _end(spans[stack[-1]]) <= span.start_us:
                stack.pop()
            if stack:
                parent = spans[stack[-1]]
                own[stack[-1]] -= min(span.duration_us, _end(parent) - span.start_us)
            stack.append(index)
    return [max(0.0, value) for value in own]


def operator_name(name: str) -> str:
    """The name an operator is compared under (run-specific ids removed)."""
    for pattern, replacement in _RENAMES:
        if pattern.match(name):
            return replacement
    return name


def _end(span: Span) -> float:
    return span.start_us + span.duration_us


def operator_times(spans: Sequence[Span]) -> OperatorTimes:
    """Self time per profiled step of every operator (CPU ops, kernels, copies) in ``spans``."""
    selves = self_times_us(spans)
    steps = sum(1 for span in spans if span.name.startswith(STEP_PREFIX))
    totals: dict[str, float] = {}
    for span, self_us in zip(spans, selves, strict=True):
        if span.category in OPERATOR_CATEGORIES and not span.name.startswith(STEP_PREFIX):
            name = operator_name(span.name)
            totals[name] = totals.get(name, 0.0) + self_us
    divisor = max(steps, 1) * 1000.0
    return OperatorTimes({name: total / divisor for name, total in totals.items()}, max(steps, 1))


@dataclass(frozen=True)
class OperatorGrowth:
    """An operator whose self time per step grew: before, after (ms/step) and the change."""

    name: str
    before_ms: float
    after_ms: float

    @property
    def change_ms(self) -> float:
        """After minus before, ms/step."""
        return self.after_ms - self.before_ms

    @property
    def change_pct(self) -> float | None:
        """The change in % of before (``None``: the operator is new)."""
        return None if self.before_ms <= 0 else 100.0 * self.change_ms / self.before_ms


def grown_operators(
    before: Iterable[Mapping[str, float]],
    after: Iterable[Mapping[str, float]],
    *,
    min_ms: float = 0.01,
    min_pct: float = 10.0,
    limit: int = 3,
    falling: bool = False,
) -> list[OperatorGrowth]:
    """The operators whose mean self time per step grew most from ``before`` to ``after`` runs
    (with ``falling``: fell most, an operator gone included; what explains a speed-up).

    Parameters
    ----------
    before, after
        Per run, self time per step (ms) by operator name.
    min_ms, min_pct
        How much an operator must move to be named: both, absolute (ms/step) and relative.
    limit
        How many to return, largest absolute move first.
    falling
        Name the operators that fell instead of those that grew.

    Returns
    -------
    list of OperatorGrowth
        Empty when a side has no run.
    """
    mean_before, mean_after = _mean(list(before)), _mean(list(after))
    if mean_before is None or mean_after is None:
        return []
    sign = -1.0 if falling else 1.0
    moved = [
        OperatorGrowth(name, mean_before.get(name, 0.0), mean_after.get(name, 0.0))
        for name in sorted({*mean_before, *mean_after})
        if sign * (mean_after.get(name, 0.0) - mean_before.get(name, 0.0)) >= min_ms
    ]
    moved = [item for item in moved if item.change_pct is None or sign * item.change_pct >= min_pct]
    return sorted(moved, key=lambda item: (-sign * item.change_ms, item.name))[:limit]


def total_ms(runs: Iterable[Mapping[str, float]]) -> float | None:
    """The mean over runs of all operators' self time per step (``None`` without a run)."""
    mean = _mean(list(runs))
    return None if mean is None else sum(mean.values())


def _mean(runs: list[Mapping[str, float]]) -> dict[str, float] | None:
    if not runs:
        return None
    names = {name for run in runs for name in run}
    return {name: sum(run.get(name, 0.0) for run in runs) / len(runs) for name in names}
