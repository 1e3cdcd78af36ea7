"""summarize_served: the timed requests of a server log, summarised as the median request."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.parsing import ParseError, RunStatus
from runners.parsing.served import PER_STEP_UNKNOWN_SERVED, summarize_served
from tests.fakes.fake_sglang import request_log, served_log

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang"
FAILED_REQUEST = "\n".join(
    [
        "[05-19 10:06:00] Running pipeline stages: ['denoising_stage', 'decoding_stage']",
        "[05-19 10:06:00] [DenoisingStage] started...",
        (
            "[05-19 10:06:01] [DenoisingStage] Error during execution after 812.4410 ms: "
            "CUDA out of memory. Tried to allocate 20.00 GiB"
        ),
    ]
)


def test_median_of_the_timed_requests_leaves_both_warmups_out() -> None:
    # Server warmup (1 step, 41 s), then the client's warmup, then three timed requests.
    log = served_log([0.2637, 0.2700, 0.2600, 0.2650])
    run = summarize_served(log, [1000.0, 1200.0, 1100.0])
    assert run.status is RunStatus.OK
    assert run.denoise_step_ms == pytest.approx(265.0)
    assert run.denoise_step_basis == "median"
    assert run.denoise_step_median_ms == pytest.approx(265.0)
    assert run.denoise_step_mean_ms == pytest.approx(265.0)
    assert run.denoise_stage_ms == pytest.approx(13250.0)
    assert run.denoise_step_count == 50
    assert run.e2e_ms == pytest.approx(1100.0)
    assert run.step_times_ms == ()
    assert [stage.name for stage in run.stages][-2:] == ["DenoisingStage", "DecodingStage"]
    assert run.stages[-2].duration_ms == pytest.approx(13250.0)  # the last timed request's
    assert run.peak_memory_mb == pytest.approx(46.51 * 1024)
    assert (run.requests_seen, run.warmup_requests) == (5, 2)
    assert run.warnings == (PER_STEP_UNKNOWN_SERVED,)
    assert run.sources == ("log",)


def test_a_slow_outlier_does_not_move_the_median() -> None:
    run = summarize_served(served_log([0.26, 0.26, 0.27, 0.90, 0.26]), [1.0, 1.0, 9.0, 1.0])
    assert run.denoise_step_ms == pytest.approx(265.0)
    assert run.e2e_ms == pytest.approx(1.0)


def test_fewer_successful_requests_than_asked_is_a_warning() -> None:
    run = summarize_served(served_log([0.26, 0.27, 0.28]), [1.0, 2.0], requested=5)
    assert run.status is RunStatus.OK
    assert "only 2 of 5 requests succeeded" in run.warnings
    assert run.denoise_step_ms == pytest.approx(275.0)


def test_a_log_with_fewer_requests_than_timed_ones_says_so() -> None:
    run = summarize_served(served_log([0.26]), [1.0, 2.0, 3.0])
    assert run.status is RunStatus.OK
    assert "server log shows 1 requests for 3 timed ones" in run.warnings
    assert run.denoise_step_ms == pytest.approx(260.0)


def test_a_failed_timed_request_is_named_and_left_out() -> None:
    log = "\n".join(
        [served_log([0.26, 0.27]), FAILED_REQUEST, served_log([0.29]).split("ready to roll!\n", 1)[1]]
    )
    run = summarize_served(log, [1.0, 2.0, 3.0])
    assert run.status is RunStatus.OK
    assert run.denoise_step_ms == pytest.approx(280.0)  # median of 270 and 290
    assert any(
        w.startswith("timed request 2 of 3 did not complete: CUDA out of memory in DenoisingStage")
        for w in run.warnings
    )
    assert "step time of 2 of 3 timed requests known; median over those" in run.warnings


def test_all_timed_requests_failed() -> None:
    log = "\n".join([served_log([0.26]), FAILED_REQUEST])
    run = summarize_served(log, [5.0])
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith("no timed request completed: CUDA out of memory in DenoisingStage")
    assert run.denoise_step_ms is None
    assert run.e2e_ms is None


def test_no_timed_request_is_a_failure() -> None:
    run = summarize_served(served_log([0.26]), [])
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == "no request was timed"


def test_an_empty_log_cannot_be_read() -> None:
    with pytest.raises(ParseError):
        summarize_served("  \n", [1.0])


def test_step_time_is_derived_when_the_average_line_is_missing() -> None:
    block = "\n".join(
        line for line in request_log(0.3, 40).split("\n") if "average time per step" not in line
    )
    run = summarize_served(block, [1.0])
    assert run.denoise_step_ms == pytest.approx(300.0)
    assert run.denoise_step_count == 40


def test_a_recorded_warmup_run_reads_as_one_timed_request() -> None:
    # sglang generate --warmup: the scheduler-marked warmup, then the measured request (0.2637 s/step).
    log = (DATA / "qwen_image_669a9bd.log").read_text(encoding="utf-8")
    run = summarize_served(log, [13628.4])
    assert run.status is RunStatus.OK
    assert run.denoise_step_ms == pytest.approx(263.7)
    assert run.e2e_ms == pytest.approx(13628.4)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)


def served_request(avg_s: float, peak_line: str) -> str:
    """One served request's records: its stages, the client-side timer, then its peak line."""
    return "\n".join(
        [
            "[06-02 15:03:00] Sampling params:",
            "[06-02 15:03:00] [DenoisingStage] started...",
            f"[06-02 15:03:13] [DenoisingStage] average time per step: {avg_s:.4f} seconds",
            f"[06-02 15:03:13] [DenoisingStage] finished in {avg_s * 50:.4f} seconds",
            "[06-02 15:03:13] Pixel data generated successfully in \x1b[92m13.71\x1b[0;0m seconds",
            f"[06-02 15:03:13] {peak_line}",
            "",
        ]
    )


@pytest.mark.parametrize(
    ("peak_lines", "peak_mb"),
    [
        # since 0.5.18 (runtime/entrypoints/openai/utils.py): MiB
        (
            [
                "Peak memory usage: 48012.00 MB",
                "Peak memory usage: 46938.00 MB",
                "Peak memory usage: 46940.50 MB",
            ],
            46940.5,
        ),
        # up to 0.5.17: GiB
        (
            [
                "Peak GPU memory: 46.89 GB, Peak allocated: 43.77 GB",
                "Peak GPU memory: 45.84 GB",
                "Peak GPU memory: 45.80 GB",
            ],
            45.84 * 1024,
        ),
    ],
    ids=["peak-memory-usage-mib", "peak-gpu-memory-gib"],
)
def test_peak_memory_is_the_highest_of_the_timed_requests_in_either_wording(
    peak_lines: list[str], peak_mb: float
) -> None:
    log = "".join(
        served_request(avg, line) for avg, line in zip((0.9516, 0.2637, 0.2642), peak_lines, strict=True)
    )
    run = summarize_served(log, [13900.0, 13950.0])  # the first request is the unmeasured warmup
    assert run.status is RunStatus.OK
    assert run.peak_memory_mb == pytest.approx(peak_mb)
    assert run.denoise_step_ms == pytest.approx(263.95)


def test_an_invalid_peak_is_a_warning_and_not_a_figure() -> None:
    log = served_request(0.2637, "Peak memory usage: nan MB")
    run = summarize_served(log, [13900.0])
    assert run.peak_memory_mb is None
    assert any(w.startswith("ignored invalid value 'nan' in log line") for w in run.warnings)
