"""The trace-memory benchmark's own workings (its figures are printed, never asserted): the trace it
builds is the size asked and reads as a profile, and a reading with readers at once stores one
summary of one parse."""

from __future__ import annotations

import gzip
import json

from benchmarks.trace_memory import BLOCKS_PER_STEP, build_trace, measure, prepare
from tracker.diagnosis.evidence_trace import operator_times, read_trace


def test_the_trace_has_about_the_events_asked_nested_in_steps() -> None:
    for asked in (3 * BLOCKS_PER_STEP + 4, 3 * BLOCKS_PER_STEP + 1, 7):
        events = json.loads(gzip.decompress(build_trace(asked)))["traceEvents"]
        assert asked - 3 <= sum(1 for event in events if event["ph"] == "X") <= asked
    times = operator_times(read_trace(build_trace(2 * (3 * BLOCKS_PER_STEP + 1))))
    assert times.steps == 2
    # Per block: aten::lin 30 µs around aten::mm's 20, gemm 25 on the GPU's stream.
    assert times.per_step_ms == {
        "aten::lin": BLOCKS_PER_STEP * 10 / 1000,
        "aten::mm": BLOCKS_PER_STEP * 20 / 1000,
        "gemm": BLOCKS_PER_STEP * 25 / 1000,
    }


def test_overlapping_readers_parse_the_stored_trace_once(migrated_db_url: str) -> None:
    job_id = prepare(migrated_db_url, build_trace(3_000))
    reading = measure(migrated_db_url, job_id, readers=3)
    assert reading.parses == 1
    assert reading.steps == 1
    assert reading.dropped == 0
