"""The parsers on sglang 0.5.23's wording and dump layout, and on the older era's, side by side.

The 0.5.23 fixtures are written from that version's format strings (see their header lines and
``tests/data/sglang/README.md``): a warmup that prints nothing but its "Warmup requests" bar,
colour codes inside records, per-step times in ``denoise_steps_ms``, replica-wide memory
checkpoints, and a served run's "Peak memory usage" in MiB.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from runners.parsing import (
    ParsedRun,
    RunStatus,
    clean_console_text,
    parse_perf_dump,
    parse_run,
    parse_sglang_log,
)
from runners.parsing.served import PER_STEP_UNKNOWN_SERVED, summarize_served
from runners.parsing.sglang_log import PER_STEP_UNKNOWN

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang"
GENERATE_LOG = "qwen_image_0.5.23.log"
DUMP = "perf_dump_qwen_image_0.5.23.json"
SERVED_LOG = "served_qwen_image_0.5.23.log"
STAGES_0_5_23 = [
    "InputValidationStage",
    "TextEncodingStage",
    "LatentPreparationStage",
    "TimestepPreparationStage",
    "DenoisingStage",
    "DecodingStage",
]


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_generate_log_with_a_silent_request_warmup() -> None:
    run = parse_sglang_log(read(GENERATE_LOG))
    assert run.status is RunStatus.OK
    # The warmup shows only as its bar; it is counted and never measured.
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert [(r.warmup, r.outcome, r.stored) for r in run.requests] == [
        (True, "complete", False),
        (False, "complete", True),
    ]
    assert run.denoise_step_count == 50
    assert run.denoise_step_ms == pytest.approx(263.2)
    assert run.denoise_step_basis == "mean"
    assert run.denoise_stage_ms == pytest.approx(13161.2)
    # "Warmed-up request processed in 13.41", not "Pixel data generated ... 59.15", which counts the warmup.
    assert run.e2e_ms == pytest.approx(13410.0)
    assert run.peak_memory_mb == pytest.approx(46938.0)  # "Memory usage - Max peak: 46938.00 MB"
    assert [stage.name for stage in run.stages] == STAGES_0_5_23
    assert [stage.duration_ms for stage in run.stages] == pytest.approx(
        [0.1, 208.9, 0.2, 14.9, 13161.2, 17.5]
    )
    assert run.warnings == (PER_STEP_UNKNOWN,)


def test_cleaning_the_log_first_changes_nothing() -> None:
    raw = read(GENERATE_LOG)
    assert "\x1b[" in raw
    cleaned = clean_console_text(raw)
    assert "\x1b" not in cleaned
    assert clean_console_text(cleaned) == cleaned
    assert parse_sglang_log(cleaned) == parse_sglang_log(raw)


def test_perf_dump_of_0_5_23() -> None:
    dump = parse_perf_dump(read(DUMP))
    assert len(dump.denoise_steps_ms) == 50
    assert dump.denoise_steps_ms[0] == pytest.approx(261.41273743481725)
    assert dump.denoise_steps_ms[-1] == pytest.approx(277.8810512750165)
    assert statistics.median(dump.denoise_steps_ms) == pytest.approx(262.90029128723506)
    assert dump.total_duration_ms == pytest.approx(13405.98141838283)
    assert [stage.name for stage in dump.stages] == STAGES_0_5_23
    assert dump.denoise_stage_ms == pytest.approx(13161.182853375289)
    assert [c.name for c in dump.memory_checkpoints] == [
        "before_forward",
        "after_forward",
        "load_peak",
        "runtime_peak",
        "warmup_peak",
    ]
    # The request's own peak: not warmup_peak's 52418.0 nor load_peak, both replica-wide.
    assert dump.peak_memory_mb == pytest.approx(46938.0)
    assert max(c.peak_reserved_mb or 0.0 for c in dump.memory_checkpoints) == pytest.approx(52418.0)
    # `sglang generate` writes 0.0 (not sampled) for every checkpoint's host memory.
    assert {c.peak_host_anon_mb for c in dump.memory_checkpoints} == {None}
    assert dump.tag == "cli_generate"
    assert dump.commit_hash == "e5a0d2b7c41f9a3386d0b2c7f19e4a6d8c3b0f52"
    assert dump.meta["model"] == "Qwen/Qwen-Image-2512"
    assert dump.warnings == ()


@pytest.mark.parametrize(
    ("log_name", "dump_name", "median_ms", "stage_ms", "e2e_ms", "peak_mb", "stage_names"),
    [
        (
            "qwen_image_669a9bd.log",
            "perf_dump_qwen_image_669a9bd.json",
            263.7967,
            13189.518823,
            13628.412937,
            46938.0,
            [
                "InputValidationStage",
                "TextEncodingStage",
                "ConditioningStage",
                "TimestepPreparationStage",
                "LatentPreparationStage",
                "DenoisingStage",
                "DecodingStage",
            ],
        ),
        (
            GENERATE_LOG,
            DUMP,
            262.90029128723506,
            13161.182853375289,
            13405.98141838283,
            46938.0,
            STAGES_0_5_23,
        ),
    ],
    ids=["0.5.17-era", "0.5.23"],
)
def test_both_eras_give_the_same_kind_of_numbers(
    log_name: str,
    dump_name: str,
    median_ms: float,
    stage_ms: float,
    e2e_ms: float,
    peak_mb: float,
    stage_names: list[str],
) -> None:
    run: ParsedRun = parse_run(read(log_name), read(dump_name))
    assert run.status is RunStatus.OK
    assert run.sources == ("log", "perf_dump")
    assert len(run.step_times_ms) == 50
    assert run.denoise_step_basis == "median"
    assert run.denoise_step_ms == pytest.approx(median_ms)
    assert run.denoise_stage_ms == pytest.approx(stage_ms)
    assert run.e2e_ms == pytest.approx(e2e_ms)
    assert run.peak_memory_mb == pytest.approx(peak_mb)
    assert [stage.name for stage in run.stages] == stage_names
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.warnings == ()


def test_served_run_of_0_5_23() -> None:
    # Server warmup (bar only), the compile prewarm (stage lines, 1 step), the client's unmeasured
    # request (recompiling: 0.9516 s/step, 48012 MB), then three timed requests.
    run = summarize_served(read(SERVED_LOG), [13900.0, 13950.0, 13880.0])
    assert run.status is RunStatus.OK
    assert run.denoise_step_ms == pytest.approx(263.7)  # median of 263.7, 264.2, 263.1
    assert run.denoise_step_mean_ms == pytest.approx(263.666667)
    assert run.denoise_step_count == 50
    assert run.e2e_ms == pytest.approx(13900.0)
    # "Peak memory usage" (MiB) of the timed requests: 46938, 46940, 46938.
    assert run.peak_memory_mb == pytest.approx(46940.0)
    assert (run.requests_seen, run.warmup_requests) == (6, 3)
    assert [stage.name for stage in run.stages] == STAGES_0_5_23
    assert run.warnings == (PER_STEP_UNKNOWN_SERVED,)


def test_a_served_log_read_as_a_generate_log_takes_the_requests_own_peak() -> None:
    run = parse_sglang_log(read(SERVED_LOG))
    assert run.status is RunStatus.OK
    assert run.denoise_step_ms == pytest.approx(263.1)  # the last request
    assert run.peak_memory_mb == pytest.approx(46938.0)  # its own "Peak memory usage"
