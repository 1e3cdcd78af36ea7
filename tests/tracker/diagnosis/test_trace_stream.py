"""A trace read as a stream: each event's few fields, with what a hostile trace could make the
reader hold (nesting, one long value, the bytes unpacked) refused while it streams."""

from __future__ import annotations

import gzip
import json

import pytest

from tracker.diagnosis.trace_stream import MAX_DEPTH, MAX_VALUE_BYTES, TraceError, trace_events

LIMIT = 256 * 1024 * 1024


def events(document: object) -> list[dict[str, object]]:
    return list(trace_events(gzip.compress(json.dumps(document).encode()), max_bytes=LIMIT))


def test_each_event_gives_its_top_level_fields_and_nothing_nested() -> None:
    event = {"ph": "X", "name": "aten::mm", "ts": 1.5, "dur": 2, "pid": 1, "tid": "t", "args": {"name": "no"}}
    nested_pid = {"ph": "X", "pid": [1, 2], "name": "a"}
    assert events({"schemaVersion": 1, "traceEvents": [event, 3, [4], nested_pid], "after": [{}]}) == [
        {"ph": "X", "name": "aten::mm", "ts": 1.5, "dur": 2, "pid": 1, "tid": "t"},
        {"ph": "X", "pid": None, "name": "a"},
    ]
    assert events([event]) == events({"traceEvents": [event]})  # a bare list of events reads too
    with pytest.raises(TraceError, match="no traceEvents list"):
        events({"traceEvents": {"ph": "X"}})
    with pytest.raises(TraceError, match="not JSON"):
        list(trace_events(b'{"traceEvents": [{"ph": "X"},', max_bytes=LIMIT))


@pytest.mark.parametrize(
    ("document", "error"),
    [
        # Nesting a profile never has (a list of lists, or args nested in one event).
        (b"[" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels"),
        (
            b'{"traceEvents": [{"args": ' + b'{"a": ' * MAX_DEPTH + b"1" + b"}" * (MAX_DEPTH + 2) + b"]}",
            "nested",
        ),
        # One value the JSON reader would hold whole: a long string, one of escaped quotes, a number.
        (b'[{"name": "' + b"a" * (MAX_VALUE_BYTES + 200_000) + b'"}]', "a JSON value too long"),
        (b'[{"name": "' + b'\\"' * (MAX_VALUE_BYTES // 2 + 200_000) + b'"}]', "a JSON value too long"),
        (b'[{"ts": 1' + b"0" * (MAX_VALUE_BYTES + 200_000) + b"}]", "a JSON value too long"),
    ],
)
def test_what_a_reader_would_hold_is_refused_as_it_streams(document: bytes, error: str) -> None:
    with pytest.raises(TraceError, match=error):
        list(trace_events(gzip.compress(document), max_bytes=LIMIT))


def test_long_values_of_a_real_size_read() -> None:
    name = "void cutlass::Kernel<" + "x" * 20_000 + ">"
    assert events([{"ph": "X", "name": name}]) == [{"ph": "X", "name": name}]


def test_the_unpacked_size_is_capped_while_it_unpacks() -> None:
    bomb = gzip.compress(b"[" + b'{"ph": "M"},' * (256 * 1024) + b"{}]")
    with pytest.raises(TraceError, match="over 1 MiB unpacked"):
        list(trace_events(bomb, max_bytes=1024 * 1024))
    assert len(list(trace_events(bomb, max_bytes=4 * 1024 * 1024))) == 256 * 1024 + 1
