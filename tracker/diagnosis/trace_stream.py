"""A Chrome trace's events read as a stream (pure): unpacked and parsed a chunk at a time.

A trace gzips ~10-20x, and a hostile one far more (a 170 KB upload unpacked to 48 MiB of JSON), so
nothing here holds the document: the bytes are gunzipped as the JSON reader (``ijson``, on yajl)
asks for them, and :func:`trace_events` yields each event's few top-level fields the operator
times need; the ``args`` and every other nested value are skipped as they stream by. What a trace
can still make a reader hold is bounded: the bytes unpacked (the caller's ``max_bytes``), the
nesting (:data:`MAX_DEPTH`) and a single JSON value (:data:`MAX_VALUE_BYTES`: the JSON reader
holds a string or a number whole). The figure this gives on a 48 MiB trace, and the command that
measures it: docs/guide.md ("Reading a trace").
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from typing import Any, Final

import ijson  # type: ignore[import-untyped]

from tracker.errors import PerftrackError

GZIP_MAGIC: Final = b"\x1f\x8b"
EVENT_FIELDS: Final = frozenset({"ph", "name", "cat", "ts", "dur", "pid", "tid"})
MAX_DEPTH: Final = 64  # a profiler's events nest their args two or three levels deep
# A single JSON string or number the reader holds whole: a kernel's name runs to a few KB.
MAX_VALUE_BYTES: Final = 1024 * 1024
_MIB: Final = 1024 * 1024
_STARTS: Final = frozenset({"start_map", "start_array"})
_ENDS: Final = frozenset({"end_map", "end_array"})


class TraceError(PerftrackError, ValueError):
    """The bytes are not a Chrome trace, or not one the reader takes."""


class _Unpacked:
    """``content`` as the file the JSON reader reads: gunzipped as it is read when gzipped; refused
    (:class:`TraceError`) when corrupt, past ``max_bytes`` unpacked, or where a run of more than
    :data:`MAX_VALUE_BYTES` holds no string's quote (one value the reader would hold whole)."""

    def __init__(self, content: bytes, max_bytes: int) -> None:
        buffer = io.BytesIO(content)
        self._source: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=buffer, mode="rb") if content[:2] == GZIP_MAGIC else buffer
        )
        self._max_bytes = max_bytes
        self._read = 0
        self._unquoted = 0  # bytes since the last quote that opens or closes a string
        self._last = b""

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` unpacked bytes (``b""`` at the end)."""
        want = 64 * 1024 if size < 0 else size
        try:
            chunk = self._source.read(min(want, self._max_bytes - self._read + 1))
        except EOFError:
            raise TraceError("not a gzip file: truncated") from None
        except (OSError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
            raise TraceError(f"not a gzip file: {error}") from None
        self._read += len(chunk)
        if self._read > self._max_bytes:
            raise TraceError(f"over {self._max_bytes // _MIB} MiB unpacked")
        self._check_values(chunk)
        return chunk

    def _check_values(self, chunk: bytes) -> None:
        """Count the bytes since the last unescaped quote; a chunk whose every quote is escaped
        (``\\"``, the previous chunk's last byte included) is inside one string."""
        joined = self._last + chunk
        quotes = joined.count(b'"') - (1 if self._last == b'"' else 0)
        if quotes > joined.count(b'\\"'):
            self._unquoted = len(chunk) - 1 - chunk.rfind(b'"')
        else:
            self._unquoted += len(chunk)
        self._last = chunk[-1:]
        if self._unquoted > MAX_VALUE_BYTES:
            raise TraceError(
                f"over {MAX_VALUE_BYTES // _MIB} MiB without a quote: a JSON value too long to read"
            )


def trace_events(content: bytes, *, max_bytes: int) -> Iterator[dict[str, Any]]:
    """Each event of a Chrome trace (gzipped or not), as its top-level fields of
    :data:`EVENT_FIELDS` that hold a string, a number, a boolean or null (a nested value reads as
    ``None``), in the trace's order. The events are the ``traceEvents`` list of an object, or the
    document itself when it is a list; an item that is not an object is skipped.

    Raises :class:`TraceError` for bytes that are not such a trace, when the error is met: the
    events before it have been yielded.
    """
    parser = ijson.basic_parse(_Unpacked(content, max_bytes), use_float=True)
    reader = _EventReader()
    try:
        for kind, value in parser:
            event = reader.step(kind, value)
            if event is not None:
                yield event
    except ijson.JSONError as error:
        raise TraceError(f"not JSON: {error}") from None
    except UnicodeDecodeError as error:
        raise TraceError(f"not JSON: {error}") from None
    if not reader.found:
        raise TraceError("no traceEvents list")


class _EventReader:
    """Follows the parser's events (``start_map``, ``map_key``, ``string``, ...) through the
    document and gathers each trace event's fields; :meth:`step` returns an event when it ends."""

    def __init__(self) -> None:
        self.found = False  # an events list was entered
        self._depth = 0
        self._root_key: Any = None  # the last key of the root object
        self._events_depth = -1  # the depth of the events list being read; -1: outside it
        self._key: Any = None  # the last key of the event being read
        self._event: dict[str, Any] | None = None

    def step(self, kind: str, value: Any) -> dict[str, Any] | None:
        """Take one parser event; the trace event it completes, if any."""
        depth = self._depth
        if kind == "map_key":
            if depth == self._events_depth + 1:
                self._key = value
            elif depth == 1:
                self._root_key = value
        elif kind in _STARTS:
            self._start(kind)
        elif kind in _ENDS:
            return self._end()
        elif self._event is not None and depth == self._events_depth + 1 and self._key in EVENT_FIELDS:
            self._event[self._key] = value
        return None

    def _start(self, kind: str) -> None:
        self._depth += 1
        depth = self._depth
        if depth > MAX_DEPTH:
            raise TraceError(f"nested deeper than {MAX_DEPTH} levels")
        if self._event is not None and depth == self._events_depth + 2 and self._key in EVENT_FIELDS:
            self._event[self._key] = None  # a field the reader takes holds a nested value
        elif depth == self._events_depth + 1:
            self._event = {} if kind == "start_map" else None
            self._key = None
        elif kind == "start_array" and (depth == 1 or (depth == 2 and self._root_key == "traceEvents")):
            self._events_depth = depth
            self.found = True

    def _end(self) -> dict[str, Any] | None:
        depth = self._depth
        self._depth -= 1
        if depth == self._events_depth + 1:
            event, self._event = self._event, None
            return event
        if depth == self._events_depth:
            self._events_depth = -1
        return None
