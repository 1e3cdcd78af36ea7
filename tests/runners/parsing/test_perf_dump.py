"""parse_perf_dump and parse_performance_log on real and realistic dumps, and on broken ones."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from runners.parsing import (
    MemoryCheckpoint,
    ParseError,
    StageTiming,
    parse_perf_dump,
    parse_performance_log,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def dump(**fields: object) -> str:
    return json.dumps(fields)


# ---------------------------------------------------------------- --perf-dump-path JSON


def test_older_shape_steps_are_stages() -> None:
    result = parse_perf_dump(read("perf_dump_qwen_image_npu_pr13662.json"))
    assert result.total_duration_ms == pytest.approx(97346.0955300834)
    assert [s.name for s in result.stages] == [
        "InputValidationStage",
        "TextEncodingStage",
        "ConditioningStage",
        "TimestepPreparationStage",
        "LatentPreparationStage",
        "DenoisingStage",
        "DecodingStage",
    ]
    assert result.stages[1].duration_ms == pytest.approx(3380.918240174651)
    assert result.denoise_stage_ms == pytest.approx(90416.92453017458)
    assert result.denoise_steps_ms == ()
    assert result.peak_memory_mb is None
    assert result.tag == "cli_generate"
    assert result.commit_hash is None  # sglang writes "N/A" outside a git checkout
    assert result.request_id is None
    assert dict(result.meta) == {"prompt": "A benchmark prompt", "model": "Qwen/Qwen-Image"}


def test_newer_shape_with_denoise_steps_and_memory_checkpoints() -> None:
    result = parse_perf_dump(read("perf_dump_qwen_image_669a9bd.json"))
    assert len(result.denoise_steps_ms) == 50
    assert result.denoise_steps_ms[0] == pytest.approx(241.337)
    assert result.denoise_steps_ms[-1] == pytest.approx(278.9562)
    assert statistics.median(result.denoise_steps_ms) == pytest.approx(263.7967)
    assert statistics.fmean(result.denoise_steps_ms) == pytest.approx(263.704002)
    assert result.total_duration_ms == pytest.approx(13628.412937)
    assert result.denoise_stage_ms == pytest.approx(13189.518823)
    assert len(result.stages) == 7
    assert result.peak_memory_mb == pytest.approx(46938.0)
    assert result.memory_checkpoints == (
        MemoryCheckpoint("before_forward", 41210.55, 41836.0, 41210.55, 41836.0),
        MemoryCheckpoint("after_forward", 41262.1, 46938.0, 44820.73, 46938.0),
    )
    assert result.commit_hash == "669a9bd3c1e84f0d9a2b7e5f6c3d1a0b9e8f7a6c"
    assert result.request_id == "5c1e2f0a-7d3b-4c55-9a61-0f4be2d1c8e3"
    assert result.meta["model"] == "Qwen/Qwen-Image-2512"
    assert result.warnings == ()


def test_truncated_dump() -> None:
    with pytest.raises(
        ParseError, match=r"^perf dump is not valid JSON \(truncated\?\) at line 164 column 1: "
    ):
        parse_perf_dump(read("perf_dump_truncated.json"))


def test_negative_step_duration_names_the_field() -> None:
    with pytest.raises(ParseError) as caught:
        parse_perf_dump(read("perf_dump_negative_duration.json"))
    assert str(caught.value) == "denoise_steps_ms[3].duration_ms: must be a finite number >= 0 (got -3.125)"


def test_denoise_steps_as_plain_numbers() -> None:
    result = parse_perf_dump(dump(total_duration_ms=10.0, denoise_steps_ms=[3.0, 1.5, 2.5]))
    assert result.denoise_steps_ms == (3.0, 1.5, 2.5)


def test_denoise_step_objects_are_put_in_step_order() -> None:
    steps = [
        {"step": 2, "duration_ms": 3.0},
        {"step": 0, "duration_ms": 1.0},
        {"step": 1, "duration_ms": 2.0},
    ]
    assert parse_perf_dump(dump(denoise_steps_ms=steps)).denoise_steps_ms == (1.0, 2.0, 3.0)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            dump(denoise_steps_ms=[1.0, 2.0, 3.0, -1]),
            "denoise_steps_ms[3]: must be a finite number >= 0 (got -1)",
        ),
        (
            dump(denoise_steps_ms=[1.0, "fast"]),
            "denoise_steps_ms[1]: must be a finite number >= 0 (got string 'fast')",
        ),
        (dump(denoise_steps_ms=[1.0, None]), "denoise_steps_ms[1]: must be a finite number >= 0 (got null)"),
        ('{"denoise_steps_ms": [1.0, NaN]}', "denoise_steps_ms[1]: must be a finite number >= 0 (got nan)"),
        ('{"total_duration_ms": Infinity}', "total_duration_ms: must be a finite number >= 0 (got inf)"),
        (dump(total_duration_ms=True), "total_duration_ms: must be a finite number >= 0 (got a boolean)"),
        (
            dump(total_duration_ms="12.5"),
            "total_duration_ms: must be a finite number >= 0 (got string '12.5')",
        ),
        (
            dump(steps=[{"name": "A", "duration_ms": 1}, {"duration_ms": 2}]),
            "steps[1].name: must be a non-empty string",
        ),
        (
            dump(steps=[{"name": "A", "duration_ms": -0.5}]),
            "steps[0].duration_ms: must be a finite number >= 0",
        ),
        (dump(steps=[{"name": "A"}]), "steps[0]: has no duration_ms"),
        (dump(steps={"name": "A"}), "steps: must be a list (got an object)"),
        (
            dump(denoise_steps_ms=[{"step": 0, "duration_ms": 1.0}, {"step": 2, "duration_ms": 1.0}]),
            "denoise_steps_ms: step indices must run 0..1 once each (got 0, 2)",
        ),
        (
            dump(denoise_steps_ms=[{"step": 0, "duration_ms": 1.0}, {"step": 0, "duration_ms": 1.0}]),
            "denoise_steps_ms: step indices must run 0..1 once each (got 0, 0)",
        ),
        (
            dump(denoise_steps_ms=[{"step": -1, "duration_ms": 1.0}]),
            "denoise_steps_ms[0].step: must be an integer >= 0",
        ),
        (
            dump(total_duration_ms=1.0, memory_checkpoints={"after_forward": {"peak_reserved_mb": -2}}),
            "memory_checkpoints.after_forward.peak_reserved_mb: must be a finite number >= 0",
        ),
        (
            dump(total_duration_ms=1.0, memory_checkpoints={"after_forward": {"peak_host_anon_mb": "lots"}}),
            "memory_checkpoints.after_forward.peak_host_anon_mb: must be a finite number >= 0",
        ),
        (dump(total_duration_ms=1.0, commit_hash=5), "commit_hash: must be a string"),
        ("[1, 2]", "perf dump: must be an object (got a list)"),
        ("", "perf dump is empty"),
        (dump(meta={"model": "x"}), "perf dump has no timing fields"),
        ('{"total_duration_ms": 1.0,', "perf dump is not valid JSON (truncated?) at line 1 column 27"),
    ],
)
def test_malformed_dumps_name_the_problem(document: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_perf_dump(document)
    assert str(caught.value).startswith(message)


def test_record_shape_stages_map_and_numeric_steps() -> None:
    result = parse_perf_dump(
        dump(
            stages={"TextEncodingStage": 200.0, "DenoisingStage": 3000.0},
            steps=[100.0, 101.0],
            total_duration_ms=3300.0,
            memory_snapshots={"after_forward": {"peak_allocated_mb": 900.0}},
        )
    )
    assert result.stages == (StageTiming("TextEncodingStage", 200.0), StageTiming("DenoisingStage", 3000.0))
    assert result.denoise_steps_ms == (100.0, 101.0)
    assert result.peak_memory_mb == 900.0
    assert result.warnings == (
        "memory checkpoints have no peak_reserved_mb; peak memory is peak_allocated_mb",
    )


def checkpoint(peak_reserved_mb: float, host_mb: float = 0.0) -> dict[str, float]:
    """A 0.5.23 memory checkpoint (runtime/utils/perf_logger.py, MemorySnapshot.to_dict)."""
    return {
        "allocated_mb": 100.0,
        "reserved_mb": 120.0,
        "peak_allocated_mb": 110.0,
        "peak_reserved_mb": peak_reserved_mb,
        "peak_host_anon_mb": host_mb,
    }


def test_replica_wide_checkpoints_stay_out_of_the_requests_peak() -> None:
    # gpu_worker._record_replica_peak_memory adds load, warmup and runtime peaks to every dump.
    checkpoints = {
        "before_forward": checkpoint(41836.0),
        "after_forward": checkpoint(46938.0, host_mb=18211.5),
        "load_peak": checkpoint(58204.0),
        "runtime_peak": checkpoint(47010.0),
        "warmup_peak": checkpoint(52418.0),
    }
    result = parse_perf_dump(dump(total_duration_ms=1.0, memory_checkpoints=checkpoints))
    assert result.peak_memory_mb == 46938.0
    assert [c.name for c in result.memory_checkpoints] == list(checkpoints)  # all kept
    assert result.memory_checkpoints[1] == MemoryCheckpoint(
        "after_forward", 100.0, 120.0, 110.0, 46938.0, 18211.5
    )
    assert result.memory_checkpoints[0].peak_host_anon_mb is None  # 0.0: not sampled
    assert result.warnings == ()


def test_runtime_peak_stands_in_only_when_the_request_has_no_peak_of_its_own() -> None:
    checkpoints = {"load_peak": checkpoint(58204.0), "runtime_peak": checkpoint(47010.0)}
    result = parse_perf_dump(dump(total_duration_ms=1.0, memory_checkpoints=checkpoints))
    assert result.peak_memory_mb == 47010.0
    assert result.warnings == (
        (
            "memory checkpoints hold no peak of the request itself; peak memory is runtime_peak "
            "(the highest over every real request this server ran)"
        ),
    )
    only_loading = parse_perf_dump(
        dump(total_duration_ms=1.0, memory_checkpoints={"load_peak": checkpoint(58204.0)})
    )
    assert only_loading.peak_memory_mb is None
    assert only_loading.warnings == (
        "memory checkpoints (load_peak) hold no peak of the request; peak memory unknown",
    )


def test_legacy_named_denoising_step_blocks() -> None:
    steps = [
        {"name": "DenoisingStage", "index": None, "duration_ms": 30.0},
        {"name": "denoising_step_1", "index": 1, "duration_ms": 14.0},
        {"name": "denoising_step_0", "index": 0, "duration_ms": 16.0},
    ]
    result = parse_perf_dump(dump(total_duration_ms=31.0, steps=steps))
    assert result.stages == (StageTiming("DenoisingStage", 30.0),)
    assert result.denoise_steps_ms == (16.0, 14.0)


# ---------------------------------------------------------------- performance.log


def test_performance_log_records() -> None:
    records = parse_performance_log(read("performance.log"))
    assert [r.request_id for r in records] == [
        "0b7c9e41-2f6a-4d1e-8c3b-95a0e7f1d2c4",
        "d93a1f5e-64b0-4c2f-a8e7-1b5c0d9e3f72",
    ]
    last = records[-1]
    assert last.tag == "pipeline_stage_metrics"
    assert len(last.denoise_steps_ms) == 50
    assert statistics.median(last.denoise_steps_ms) == pytest.approx(258.3801)
    assert statistics.fmean(last.denoise_steps_ms) == pytest.approx(258.200008)
    assert last.total_duration_ms == pytest.approx(13361.990417)
    assert [s.name for s in last.stages][-2:] == ["DenoisingStage", "DecodingStage"]
    assert last.denoise_stage_ms == pytest.approx(sum(last.denoise_steps_ms) + 4.31)
    assert last.peak_memory_mb == pytest.approx(46938.0)
    assert records[0].total_duration_ms == pytest.approx(13357.204881)


def test_performance_log_per_stage_lines_are_grouped_by_request() -> None:
    lines = [
        {
            "request_id": "a",
            "tag": "pipeline_stage_metric",
            "stage": "TextEncodingStage",
            "duration_ms": 210.0,
        },
        {
            "request_id": "a",
            "tag": "pipeline_stage_metric",
            "stage": "DenoisingStage",
            "duration_ms": 13000.0,
        },
        {
            "request_id": "b",
            "tag": "pipeline_stage_metric",
            "stage": "DenoisingStage",
            "duration_ms": 12000.0,
        },
    ]
    records = parse_performance_log("\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert [(r.request_id, [s.name for s in r.stages]) for r in records] == [
        ("a", ["TextEncodingStage", "DenoisingStage"]),
        ("b", ["DenoisingStage"]),
    ]
    assert records[1].denoise_stage_ms == 12000.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"total_duration_ms": 1.0}\n{"total_duration_ms": \n',
            "performance.log line 2: not valid JSON at column 23",
        ),
        ('\n\n{"steps": [1.0, -2.0]}\n', "performance.log line 3: steps[1]: must be a finite number >= 0"),
        ('{"stages": "fast"}\n', "performance.log line 1: stages: must be a list (got string 'fast')"),
        ("[1]\n", "performance.log line 1: must be an object (got a list)"),
        ("\n   \n", "performance.log has no records"),
    ],
)
def test_malformed_performance_log(text: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_performance_log(text)
    assert str(caught.value).startswith(message)
