"""combine() and parse_run(): which source wins for each field, and when they disagree."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import runners.parsing as parsing
from runners.parsing import (
    ParsedRun,
    ParseError,
    PerfDump,
    RunStatus,
    StageTiming,
    combine,
    parse_perf_dump,
    parse_performance_log,
    parse_run,
    parse_sglang_log,
)
from runners.parsing.sglang_log import PER_STEP_UNKNOWN

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def log_669() -> ParsedRun:
    return parse_sglang_log(read("qwen_image_669a9bd.log"))


@pytest.fixture
def dump_669() -> PerfDump:
    return parse_perf_dump(read("perf_dump_qwen_image_669a9bd.json"))


def test_public_api() -> None:
    for name in (
        "ParsedRun",
        "RunStatus",
        "StageTiming",
        "ParseError",
        "parse_sglang_log",
        "parse_perf_dump",
        "parse_performance_log",
        "combine",
        "parse_run",
    ):
        assert name in parsing.__all__
        assert hasattr(parsing, name)


def test_log_and_dump(log_669: ParsedRun, dump_669: PerfDump) -> None:
    run = combine(log_669, dump_669)
    assert run.status is RunStatus.OK
    assert run.sources == ("log", "perf_dump")
    assert run.denoise_step_count == 50
    assert len(run.step_times_ms) == 50
    assert run.denoise_step_basis == "median"
    assert run.denoise_step_ms == pytest.approx(263.7967)
    assert run.denoise_step_median_ms == pytest.approx(263.7967)
    assert run.denoise_step_mean_ms == pytest.approx(263.704002)
    assert run.denoise_stage_ms == pytest.approx(13189.518823)  # the dump's, not the log's 13189.5
    assert run.stages[1] == StageTiming("TextEncodingStage", 210.372614)
    assert run.e2e_ms == pytest.approx(13628.412937)
    assert run.peak_memory_mb == pytest.approx(46938.0)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.warnings == ()  # per-step times are known now, and the sources agree


def test_log_alone_is_returned_unchanged(log_669: ParsedRun) -> None:
    assert combine(log_669, None) == log_669
    assert PER_STEP_UNKNOWN in log_669.warnings


def test_step_count_disagreement(log_669: ParsedRun, dump_669: PerfDump) -> None:
    shorter = replace(dump_669, denoise_steps_ms=dump_669.denoise_steps_ms[:49])
    run = combine(log_669, shorter)
    assert run.denoise_step_count == 49
    assert "step count differs: log says 50, perf dump has 49 step times" in run.warnings


def test_mean_disagreement(log_669: ParsedRun) -> None:
    slow = PerfDump(denoise_steps_ms=(300.0,) * 50)
    run = combine(log_669, slow)
    assert run.denoise_step_ms == 300.0
    assert "mean step time differs by more than 5%: log 263.7 ms, perf dump 300.0 ms" in run.warnings
    # fields the dump lacks still come from the log
    assert run.denoise_stage_ms == pytest.approx(13189.5)
    assert run.e2e_ms == pytest.approx(13630.0)
    assert run.peak_memory_mb == pytest.approx(45.84 * 1024)
    assert run.sources == ("log", "perf_dump")


def test_steps_that_add_up_to_more_than_the_stage() -> None:
    run = combine(
        None, PerfDump(stages=(StageTiming("DenoisingStage", 100.0),), denoise_steps_ms=(60.0, 60.0))
    )
    assert "per-step times sum to 120.0 ms, more than the denoising stage's 100.0 ms" in run.warnings


def test_failed_log_stays_failed(dump_669: PerfDump) -> None:
    log = parse_sglang_log(read("cuda_oom.log"))
    run = combine(log, dump_669)
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == log.failure_reason
    assert run.denoise_step_ms is None
    assert run.step_times_ms == ()
    assert run.warnings[-1] == "perf dump ignored: the log shows a failed run"


def test_dump_alone(dump_669: PerfDump) -> None:
    run = combine(None, dump_669)
    assert run.status is RunStatus.OK
    assert run.sources == ("perf_dump",)
    assert run.denoise_step_ms == pytest.approx(263.7967)
    assert run.e2e_ms == pytest.approx(13628.412937)
    assert (run.requests_seen, run.warmup_requests) == (1, 0)


def test_dump_without_step_times_and_no_log() -> None:
    run = combine(None, parse_perf_dump(read("perf_dump_qwen_image_npu_pr13662.json")))
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == "perf dump has no per-step times (denoise_steps_ms) and there is no log"


def test_older_dump_adds_precise_stage_times_to_the_log() -> None:
    log = parse_sglang_log(read("log_qwen_image_edit_2511_pr20395.txt"))
    run = combine(log, parse_perf_dump(read("perf_dump_qwen_image_npu_pr13662.json")))
    # no per-step times anywhere: the log's average stays the value of record
    assert (run.denoise_step_basis, run.denoise_step_ms) == ("mean", pytest.approx(638.3))
    assert PER_STEP_UNKNOWN in run.warnings
    assert run.denoise_stage_ms == pytest.approx(90416.92453017458)
    assert run.e2e_ms == pytest.approx(97346.0955300834)
    assert run.peak_memory_mb == pytest.approx(64.44 * 1024)  # the dump has no memory checkpoints


def test_performance_log_when_there_is_no_dump() -> None:
    log = parse_sglang_log(read("qwen_image_fix.log"))
    records = parse_performance_log(read("performance.log"))
    run = combine(log, None, records)
    assert run.sources == ("log", "performance_log")
    assert run.denoise_step_ms == pytest.approx(258.3801)
    assert run.denoise_step_mean_ms == pytest.approx(258.200008)
    assert run.e2e_ms == pytest.approx(13361.990417)
    assert run.warnings[-1] == (
        "performance.log holds 2 request records; using the last (request_id d93a1f5e-64b0-4c2f-a8e7-1b5c0d9e3f72)"
    )


def test_dump_takes_precedence_over_performance_log(log_669: ParsedRun, dump_669: PerfDump) -> None:
    records = parse_performance_log(read("performance.log"))
    run = combine(log_669, dump_669, records[-1:])
    assert run.sources == ("log", "perf_dump")  # the dump had every field
    assert run.denoise_step_ms == pytest.approx(263.7967)


def test_nothing_to_combine() -> None:
    with pytest.raises(ParseError, match="nothing to combine"):
        combine(None, None)


def test_parse_run() -> None:
    run = parse_run(read("qwen_image_669a9bd.log"), read("perf_dump_qwen_image_669a9bd.json"))
    assert (run.denoise_step_basis, run.denoise_step_ms) == ("median", pytest.approx(263.7967))
    assert parse_run(read("qwen_image_669a9bd.log")).denoise_step_ms == pytest.approx(263.7)
    assert parse_run(None, read("perf_dump_qwen_image_669a9bd.json")).sources == ("perf_dump",)
    assert parse_run(
        read("log_wan_pr19488_nontty_tqdm.txt"), read("perf_dump_qwen_image_669a9bd.json")
    ).status is (RunStatus.FAILED)
    with pytest.raises(ParseError, match="nothing to parse"):
        parse_run(None)
    with pytest.raises(ParseError, match="truncated"):
        parse_run(read("qwen_image_669a9bd.log"), read("perf_dump_truncated.json"))


def test_failed_log_ignores_performance_log_too() -> None:
    log = parse_sglang_log(read("error_during_execution.log"))
    run = combine(log, None, parse_performance_log(read("performance.log")))
    assert run.status is RunStatus.FAILED
    assert run.sources == ("log",)
    assert run.warnings[-1] == "performance.log ignored: the log shows a failed run"
