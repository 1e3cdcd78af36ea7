"""Operator self time per denoising step from a ``torch.profiler`` Chrome trace (pure).

A trace's complete events (``"ph": "X"``) nest on each thread: an operator's *self* time is its
duration minus the durations of its direct children on the same process and thread (what
``key_averages()`` calls self CPU time). GPU kernels run on their own streams and have no
children, so their self time is their duration. The profiled steps are the trace's
``ProfilerStep#N`` annotations; times are summed per operator name and divided by their number.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tracker.diagnosis.trace_stream import trace_events

OPERATOR_CATEGORIES = frozenset({"cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "user_annotation"})
STEP_PREFIX = "ProfilerStep#"
# A trace gzips ~10-20x (its names repeat); an upload holds at most 4 MiB of it. Read as a stream,
# its size bounds the reading's time, not its memory: unpacked beyond this it is not a profile of
# three steps but a gzip bomb, refused while it unpacks.
MAX_TRACE_BYTES = 256 * 1024 * 1024
# The event budget: complete events kept (in columns, ~25 bytes each); those past it are counted
# (``Trace.dropped``), not kept. A profile of three denoising steps holds some 10^4 to 10^5.
MAX_TRACE_EVENTS = 1_000_000
MAX_THREADS = 4096  # distinct (pid, tid); an event on a thread past them is dropped
MAX_OPERATOR_NAMES = 20_000  # distinct names; an operator past them nests, but its time is dropped
MAX_NAME_CHARS = 1024  # a name is kept up to this many characters (kernel names run long)
_CHUNK = 65_536  # events walked at a time when nesting them (bounds the Python lists made)
# Names that carry a run's own ids (compile ids, graph hashes): one name across runs.
_RENAMES = (
    (re.compile(r"^Torch-Compiled Region: \d+/\d+$"), "Torch-Compiled Region"),
    (re.compile(r"^## Call CompiledFxGraph \w+ ##$"), "CompiledFxGraph call"),
)


@dataclass(frozen=True)
class Span:
    """One complete event: when it started and how long it lasted (µs), on which thread."""

    name: str
    category: str
    thread: tuple[Any, Any]  # (pid, tid)
    start_us: float
    duration_us: float


@dataclass(frozen=True, eq=False)
class Trace:
    """A trace's complete events (``"ph": "X"``) in columns, one row an event in the trace's order.

    ``name_ids`` index ``names`` (the operators' names, run-specific ids removed; -1: not an
    operator, a step annotation included), ``threads`` number the (pid, tid) pairs. ``steps``
    counts the ``ProfilerStep#N`` annotations; ``dropped`` the events past a budget
    (:data:`MAX_TRACE_EVENTS`, :data:`MAX_THREADS`, :data:`MAX_OPERATOR_NAMES`), whose time
    no operator carries: non-zero, the trace was read truncated.
    """

    names: tuple[str, ...]
    name_ids: npt.NDArray[np.int32]
    threads: npt.NDArray[np.int32]
    starts_us: npt.NDArray[np.float64]
    durations_us: npt.NDArray[np.float64]
    steps: int
    dropped: int

    def __len__(self) -> int:
        return len(self.starts_us)

    @classmethod
    def of(cls, spans: Iterable[Span], *, max_events: int | None = None) -> Trace:
        """The trace of ``spans``, in their order (at most ``max_events`` kept, by default
        :data:`MAX_TRACE_EVENTS`)."""
        columns = _Columns(MAX_TRACE_EVENTS if max_events is None else max_events)
        for span in spans:
            columns.add(span.name, span.category, span.thread, span.start_us, span.duration_us)
        return columns.trace()


@dataclass(frozen=True)
class OperatorTimes:
    """Per operator name, self time per profiled step (ms), how many steps were profiled, and how
    many events were dropped past the reader's budgets (their time is in no operator's)."""

    per_step_ms: dict[str, float]
    steps: int
    dropped: int = 0


class _Columns:
    """A :class:`Trace` being read: each event appended as it streams by, within the budgets."""

    def __init__(self, max_events: int) -> None:
        self._max_events = max_events
        self._names: dict[str, int] = {}  # operator name -> id
        self._raw_names: dict[str, int] = {}  # the name as the trace spells it -> id
        self._threads: dict[tuple[Any, Any], int] = {}
        self._name_ids = array("i")
        self._thread_ids = array("i")
        self._starts = array("d")
        self._durations = array("d")
        self._steps = 0
        self._dropped = 0

    def add(self, name: str, category: str, thread: tuple[Any, Any], start: float, duration: float) -> None:
        """Keep one complete event, or count it as dropped past a budget."""
        thread_id = self._threads.get(thread)
        if len(self._starts) >= self._max_events or (thread_id is None and len(self._threads) >= MAX_THREADS):
            self._dropped += 1
            return
        if thread_id is None:
            thread_id = self._threads[thread] = len(self._threads)
        step = name.startswith(STEP_PREFIX)
        self._steps += step
        operator = category in OPERATOR_CATEGORIES and not step
        self._name_ids.append(self._name_id(name) if operator else -1)
        self._thread_ids.append(thread_id)
        self._starts.append(start)
        self._durations.append(duration)

    def _name_id(self, raw: str) -> int:
        known = self._raw_names.get(raw)
        if known is not None:
            return known
        name = operator_name(raw)[:MAX_NAME_CHARS]
        name_id = self._names.get(name)
        if name_id is None:
            if len(self._names) >= MAX_OPERATOR_NAMES:
                self._dropped += 1
                return -1
            name_id = self._names[name] = len(self._names)
        if len(raw) <= MAX_NAME_CHARS and len(self._raw_names) < 2 * MAX_OPERATOR_NAMES:
            self._raw_names[raw] = name_id
        return name_id

    def trace(self) -> Trace:
        """The columns read so far."""
        return Trace(
            names=tuple(self._names),
            name_ids=np.frombuffer(self._name_ids, dtype=np.int32),
            threads=np.frombuffer(self._thread_ids, dtype=np.int32),
            starts_us=np.frombuffer(self._starts, dtype=np.float64),
            durations_us=np.frombuffer(self._durations, dtype=np.float64),
            steps=self._steps,
            dropped=self._dropped,
        )


def read_trace(content: bytes, *, max_events: int | None = None) -> Trace:
    """The complete events of a Chrome trace, gzipped or not, read as a stream and kept up to
    ``max_events`` (by default :data:`MAX_TRACE_EVENTS`; the rest counted as dropped);
    :class:`~tracker.diagnosis.trace_stream.TraceError` when it is not a trace."""
    columns = _Columns(MAX_TRACE_EVENTS if max_events is None else max_events)
    for event in trace_events(content, max_bytes=MAX_TRACE_BYTES):
        if event.get("ph") != "X":
            continue
        start, duration = event.get("ts"), event.get("dur")
        if not isinstance(start, int | float) or not isinstance(duration, int | float) or duration < 0:
            continue
        thread = (_thread_part(event.get("pid")), _thread_part(event.get("tid")))
        columns.add(
            str(event.get("name", "")), str(event.get("cat", "")), thread, float(start), float(duration)
        )
    return columns.trace()


def _thread_part(value: Any) -> Any:
    """A pid or tid as a key: a long string cut short."""
    return value[:256] if isinstance(value, str) else value


def self_times_us(trace: Trace) -> npt.NDArray[np.float64]:
    """Each event's self time (µs), in the trace's order: duration minus its direct children's.

    Children are the events that start inside it on the same thread; a child that outlasts its
    parent (clock rounding) counts only up to the parent's end. The events are walked by thread,
    then start (the longer first), :data:`_CHUNK` at a time.
    """
    own = trace.durations_us.copy()
    order = np.lexsort((-trace.durations_us, trace.starts_us, trace.threads))
    stack: list[tuple[int, float]] = []  # (index, end) of the open events on the current thread
    thread_now = -1
    for first in range(0, len(order), _CHUNK):
        indices = order[first : first + _CHUNK]
        parents: list[int] = []
        amounts: list[float] = []
        rows = zip(
            indices.tolist(),
            trace.threads[indices].tolist(),
            trace.starts_us[indices].tolist(),
            trace.durations_us[indices].tolist(),
            strict=True,
        )
        for index, thread, start, duration in rows:
            if thread != thread_now:
                stack.clear()
                thread_now = thread
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                parent, end = stack[-1]
                parents.append(parent)
                amounts.append(min(duration, end - start))
            stack.append((index, start + duration))
        np.subtract.at(own, np.asarray(parents, dtype=np.intp), np.asarray(amounts, dtype=np.float64))
    return np.maximum(own, 0.0)


def operator_name(name: str) -> str:
    """The name an operator is compared under (run-specific ids removed)."""
    for pattern, replacement in _RENAMES:
        if pattern.match(name):
            return replacement
    return name


def operator_times(trace: Trace) -> OperatorTimes:
    """Self time per profiled step of every operator (CPU ops, kernels, copies) in ``trace``."""
    selves = self_times_us(trace)
    operators = trace.name_ids >= 0
    totals = np.bincount(trace.name_ids[operators], weights=selves[operators], minlength=len(trace.names))
    steps = max(trace.steps, 1)
    divisor = steps * 1000.0
    per_step = {
        name: float(total) / divisor for name, total in zip(trace.names, totals.tolist(), strict=True)
    }
    return OperatorTimes(per_step, steps, trace.dropped)


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
