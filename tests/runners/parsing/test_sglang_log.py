"""parse_sglang_log on real and realistic ``sglang generate`` logs, and on each format variation."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.parsing import ParsedRun, ParseError, RunStatus, parse_sglang_log
from runners.parsing._logtext import logical_lines, parse_progress
from runners.parsing.sglang_log import PER_STEP_UNKNOWN, parse_sglang_log_file

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang"
GIB = 1024.0


def parse(name: str) -> ParsedRun:
    return parse_sglang_log((DATA / name).read_text(encoding="utf-8", errors="replace"))


def stage_names(run: ParsedRun) -> list[str]:
    return [stage.name for stage in run.stages]


def failed(run: ParsedRun) -> None:
    """A failed run carries a reason and no numbers."""
    assert run.status is RunStatus.FAILED
    assert run.failure_reason
    assert run.denoise_step_ms is None
    assert run.denoise_step_mean_ms is None
    assert run.denoise_stage_ms is None
    assert run.e2e_ms is None
    assert run.peak_memory_mb is None
    assert run.stages == ()
    assert run.sources == ("log",)


# ---------------------------------------------------------------- real logs


def test_flux_log_pasted_as_comments_with_tty_tqdm() -> None:
    run = parse("log_flux1dev_diffgenerator_thirdparty.txt")
    assert run.status is RunStatus.OK
    assert run.denoise_step_count == 50
    assert run.denoise_step_mean_ms == pytest.approx(707.6)
    assert run.denoise_step_ms == pytest.approx(707.6)
    assert run.denoise_step_basis == "mean"
    assert run.denoise_step_median_ms is None
    assert run.step_times_ms == ()
    assert run.denoise_stage_ms == pytest.approx(35383.3)
    assert run.peak_memory_mb == pytest.approx(25.81 * GIB)
    assert run.e2e_ms == pytest.approx(36820.0)
    assert stage_names(run) == [
        "InputValidationStage",
        "TextEncodingStage",
        "ConditioningStage",
        "TimestepPreparationStage",
        "LatentPreparationStage",
        "DenoisingStage",
        "DecodingStage",
    ]
    assert [s.duration_ms for s in run.stages] == pytest.approx([0.0, 50.6, 0.0, 0.5, 0.2, 35383.3, 104.1])
    assert (run.requests_seen, run.warmup_requests) == (1, 0)
    assert run.warnings == (PER_STEP_UNKNOWN,)
    assert run.sources == ("log",)


def test_wan_piped_log_cut_off_mid_denoise_fails_naming_the_step() -> None:
    run = parse("log_wan_pr19488_nontty_tqdm.txt")
    failed(run)
    assert run.failure_reason == (
        "log ends mid-denoise: DenoisingStage started but never finished (cut off at step 8/40)"
    )
    assert run.requests_seen == 1


def test_qwen_image_edit_excerpt() -> None:
    run = parse("log_qwen_image_edit_2511_pr20395.txt")
    assert run.status is RunStatus.OK
    assert run.denoise_step_count == 50
    assert run.denoise_step_mean_ms == pytest.approx(638.3)
    assert run.denoise_stage_ms == pytest.approx(31918.5)
    assert run.peak_memory_mb == pytest.approx(64.44 * GIB)
    assert [(s.name, s.duration_ms) for s in run.stages] == [
        ("DenoisingStage", pytest.approx(31918.5)),
        ("DecodingStage", pytest.approx(141.7)),
    ]
    # --warmup is on and the excerpt ends before "Warmed-up request processed": the 44.47 s
    # client-side time counts the warmup too, so there is no e2e of the measured request.
    assert run.e2e_ms is None
    assert any("includes the warmup" in w for w in run.warnings)
    assert any("single request" in w for w in run.warnings)


# ---------------------------------------------------------------- Qwen-Image regression fixtures


@pytest.mark.parametrize(
    ("name", "mean_ms", "stage_ms", "e2e_ms", "peak_gib"),
    [
        ("qwen_image_669a9bd.log", 263.7, 13189.5, 13630.0, 45.84),
        ("qwen_image_4739f2e.log", 287.6, 14384.3, 14830.0, 46.51),
        ("qwen_image_fix.log", 258.2, 12913.4, 13360.0, 45.84),
    ],
)
def test_qwen_image_warmup_then_measured(
    name: str, mean_ms: float, stage_ms: float, e2e_ms: float, peak_gib: float
) -> None:
    run = parse(name)
    assert run.status is RunStatus.OK
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.denoise_step_count == 50  # the warmup ran 1 step
    assert run.denoise_step_mean_ms == pytest.approx(mean_ms)
    assert run.denoise_step_ms == pytest.approx(mean_ms)
    assert run.denoise_stage_ms == pytest.approx(stage_ms)
    assert run.e2e_ms == pytest.approx(e2e_ms)  # not "Pixel data generated", which counts the warmup
    assert run.peak_memory_mb == pytest.approx(peak_gib * GIB)  # the measured request's, not the warmup's
    assert stage_names(run) == [
        "InputValidationStage",
        "TextEncodingStage",
        "ConditioningStage",
        "TimestepPreparationStage",
        "LatentPreparationStage",
        "DenoisingStage",
        "DecodingStage",
    ]
    assert run.stages[1].duration_ms == pytest.approx(210.4)  # warmup's text encoding took 1934.2 ms
    assert run.warnings == (PER_STEP_UNKNOWN,)


def test_qwen_image_regression_is_visible() -> None:
    good, bad, fix = (parse(f"qwen_image_{c}.log") for c in ("669a9bd", "4739f2e", "fix"))
    assert bad.denoise_step_ms is not None
    assert good.denoise_step_ms is not None
    assert fix.denoise_step_ms is not None
    assert bad.denoise_step_ms / good.denoise_step_ms - 1 == pytest.approx(0.0906, abs=1e-4)
    assert fix.denoise_step_ms < good.denoise_step_ms


def test_wan22_t2v_piped_full_run() -> None:
    run = parse("wan22_t2v_piped.log")
    assert run.status is RunStatus.OK
    assert run.denoise_step_count == 40
    assert run.denoise_step_mean_ms == pytest.approx(7521.3)
    assert run.denoise_stage_ms == pytest.approx(300871.2)
    assert run.e2e_ms == pytest.approx(323850.0)
    assert run.peak_memory_mb == pytest.approx(61.27 * GIB)
    assert stage_names(run) == [
        "InputValidationStage",
        "TextEncodingStage",
        "LatentPreparationStage",
        "TimestepPreparationStage",
        "DenoisingStage",
        "DecodingStage",
    ]
    assert run.stages[-1].duration_ms == pytest.approx(18412.7)
    assert (run.requests_seen, run.warmup_requests) == (1, 0)


def test_hunyuanvideo_tty_run() -> None:
    run = parse("hunyuanvideo_tty.log")
    assert run.status is RunStatus.OK
    assert run.denoise_step_count == 30
    assert run.denoise_step_mean_ms == pytest.approx(11834.2)
    assert run.denoise_stage_ms == pytest.approx(355087.1)
    assert run.e2e_ms == pytest.approx(388690.0)
    assert run.peak_memory_mb == pytest.approx(72.58 * GIB)
    assert len(run.stages) == 7
    assert run.stages[-1].duration_ms == pytest.approx(27331.8)


# ---------------------------------------------------------------- failure fixtures


def test_error_during_execution_names_stage_and_exception() -> None:
    run = parse("error_during_execution.log")
    failed(run)
    assert run.failure_reason == (
        "DecodingStage failed after 0.81 s: RuntimeError: Expected all tensors to be on the same device, "
        "but found at least two devices, cuda:0 and cpu!"
    )


def test_cuda_oom_traceback() -> None:
    run = parse("cuda_oom.log")
    failed(run)
    assert (
        run.failure_reason
        == "CUDA out of memory in DenoisingStage at step 3/50 (tried to allocate 38.67 GiB)"
    )


def test_tty_log_cut_off_mid_line() -> None:
    run = parse("cut_off_mid_denoise.log")
    failed(run)
    assert run.failure_reason == (
        "log ends mid-denoise: DenoisingStage started but never finished (cut off at step 12/40)"
    )


def test_log_without_any_stage_timing() -> None:
    run = parse("no_timing.log")
    failed(run)
    assert run.failure_reason == "no denoising stage found in log"  # the loading bars are not denoising
    assert run.requests_seen == 0


def test_binary_garbage() -> None:
    run = parse_sglang_log_file(DATA / "garbage.log")
    failed(run)
    assert run.failure_reason == "no denoising stage found in log (input does not look like a text log)"


def test_empty_log_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="log is empty"):
        parse_sglang_log(" \n\n")


# ---------------------------------------------------------------- inline variations

TS = "[05-01 10:00:00] "


def denoise(steps: int = 20, avg: str = "0.2500", total: str = "5.0000", rate: str = " 4.00it/s") -> str:
    """A piped DenoisingStage block: one tqdm line per update."""
    bars = "\n".join(
        f"{100 * n // steps:3d}%|          | {n}/{steps} [00:01<00:01, {rate}]" for n in range(steps + 1)
    )
    return (
        f"{TS}[DenoisingStage] started...\n{bars}\n"
        f"{TS}[DenoisingStage] average time per step: {avg} seconds\n"
        f"{TS}[DenoisingStage] finished in {total} seconds\n"
    )


def request(steps: int = 20, avg: str = "0.2500", total: str = "5.0000", pixel: str | None = "5.50") -> str:
    """A whole request: text encoding, denoising, decoding, peak memory and the client's e2e line."""
    text = (
        f"{TS}Sampling params:\n{TS}[TextEncodingStage] started...\n{TS}[TextEncodingStage] finished in 0.1000 seconds\n"
        + denoise(steps, avg, total)
        + f"{TS}[DecodingStage] started...\n{TS}[DecodingStage] finished in 0.2000 seconds\n"
        f"{TS}Peak GPU memory: 10.00 GB, Remaining GPU memory at peak: 69.00 GB.\n"
    )
    if pixel is not None:
        text += f"{TS}Pixel data generated successfully in {pixel} seconds\n"
    return text


def test_minimal_request() -> None:
    run = parse_sglang_log(request())
    assert run.status is RunStatus.OK
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (20, 250.0, 5000.0)
    assert run.e2e_ms == pytest.approx(5500.0)
    assert run.peak_memory_mb == pytest.approx(10240.0)
    assert stage_names(run) == ["TextEncodingStage", "DenoisingStage", "DecodingStage"]


def test_ansi_codes_anywhere() -> None:
    text = (
        "\x1b[32m[05-01 10:00:00]\x1b[0m [DenoisingStage] started...\n"
        "\x1b[2K\r100%|\x1b[34m██████████\x1b[0m| 20/20 [00:05<00:00,  3.90it/s]\x1b[K\n"
        "[05-01 10:00:05] [DenoisingStage] average time per step: \x1b[1m0.2561\x1b[0m seconds\n"
        "[05-01 10:00:05] \x1b[92m[DenoisingStage]\x1b[0m finished in \x1b[92m5.1234\x1b[0m seconds\n"
        "\x1b]0;sglang\x07[05-01 10:00:05] Peak GPU memory: \x1b[33m12.50\x1b[0m GB, Remaining ...\n"
    )
    run = parse_sglang_log(text)
    assert run.status is RunStatus.OK
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (20, 256.1, 5123.4)
    assert run.peak_memory_mb == pytest.approx(12.5 * GIB)


def test_carriage_returns_and_a_record_glued_to_the_bar() -> None:
    # On a TTY tqdm redraws with \r; a log record written before the bar's newline lands on its line.
    text = (
        f"{TS}[DenoisingStage] started...\n"
        "\r  0%|          | 0/4 [00:00<?, ?it/s]\r 50%|█████     | 2/4 [00:01<00:01,  1.95it/s]"
        "\r100%|██████████| 4/4 [00:02<00:00,  1.97it/s][05-01 10:00:02] [DenoisingStage] average time per step: "
        "0.5000 seconds\r\n"
        f"{TS}[DenoisingStage] finished in 2.0100 seconds\r\n"
    )
    run = parse_sglang_log(text)
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (4, 500.0, 2010.0)


def test_seconds_per_iteration_rates() -> None:
    progress = parse_progress(" 30%|███       | 12/40 [01:30<03:30,  7.52s/it]")
    assert progress is not None
    assert (progress.n, progress.total, progress.seconds_per_item) == (12, 40, 7.52)
    fast = parse_progress("100%|██████████| 50/50 [00:35<00:00,  1.41it/s]")
    assert fast is not None
    assert fast.seconds_per_item == pytest.approx(1 / 1.41)
    run = parse_sglang_log(denoise(40, "7.5213", "300.8712", rate=" 7.52s/it"))
    assert (run.denoise_step_count, run.denoise_step_mean_ms) == (40, 7521.3)


def test_comment_prefixed_log() -> None:
    text = "".join(f"# {line}\n" for line in request().splitlines())
    run = parse_sglang_log(text)
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.e2e_ms) == (20, 250.0, 5500.0)
    assert list(logical_lines("# [05-01 10:00:00] hello\n#   infer_steps: 50")) == [
        "hello",
        "  infer_steps: 50",
    ]


def test_explicit_warmup_is_never_the_measurement() -> None:
    text = (
        f"{TS}Processing prompt 1/1: a cat\n{TS}Processing warmup req...\n"
        + request(steps=1, avg="30.0000", total="30.0010", pixel=None)
        + f"{TS}Warmup req processed in 31.20 seconds\n"
        + request(steps=20, avg="0.2500", total="5.0000", pixel="36.90")
        + f"{TS}Warmed-up request processed in 5.61 seconds (with warmup excluded)\n"
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (20, 250.0, 5000.0)
    assert run.e2e_ms == pytest.approx(5610.0)


def test_warmup_without_markers_is_inferred_from_the_warmup_flag() -> None:
    text = (
        "sglang generate --model-path Qwen/Qwen-Image --warmup --seed 42\n"
        + request(steps=1, avg="30.0000", total="30.0010", pixel=None)
        + request(steps=20, pixel="36.90")
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.denoise_step_mean_ms == 250.0
    assert run.e2e_ms is None  # the only e2e line counts the warmup
    assert any("treating the first of 2 requests as the warmup" in w for w in run.warnings)


def test_warmup_steps_flag_is_not_the_warmup_flag() -> None:
    text = "sglang generate --model-path x --warmup-steps 2\n" + request(pixel="5.50") + request(pixel="5.40")
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 0)
    assert run.e2e_ms == pytest.approx(5400.0)


WARMUP_ON = [
    "sglang generate --model-path x --warmup-mode request --seed 42",
    "sglang generate --model-path x --warmup-mode server",
    "sglang generate --model-path x --warmup-mode=request",
    "sglang generate --model-path x --warmup --warmup-steps 1",
    # 0.5.23 logs its resolved args as JSON (runtime/server_args/server_args.py).
    f'{TS}server_args: {{"model_path": "x", "enable_torch_compile": true, "warmup_mode": "request", "warmup_steps": 1}}',
    f'{TS}server_args: {{"warmup": true, "warmup_mode": null, "warmup_steps": 1}}',  # 0.5.14-0.5.17
    f"{TS}server_args: ServerArgs(model_path='x', warmup_mode='server')",  # the repr fallback
]
WARMUP_OFF = [
    "sglang generate --model-path x --warmup-mode off",
    "sglang generate --model-path x --warmup --warmup-mode off",  # the mode wins (0.5.14-0.5.17)
    f'{TS}server_args: {{"model_path": "x", "warmup_mode": "off", "warmup_steps": 1}}',
    # The resolved server args come after the command line and have the last word.
    f'sglang generate --warmup-mode request\n{TS}server_args: {{"warmup_mode": "off"}}',
]


@pytest.mark.parametrize("line", WARMUP_ON)
def test_warmup_mode_request_or_server_switches_warmup_on(line: str) -> None:
    text = (
        line + "\n" + request(steps=1, avg="30.0000", total="30.0010", pixel="31.00") + request(pixel="36.90")
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.requests[0].warmup
    assert run.denoise_step_mean_ms == 250.0
    assert any("treating the first of 2 requests as the warmup" in w for w in run.warnings)


@pytest.mark.parametrize("line", WARMUP_OFF)
def test_warmup_mode_off_is_no_warmup(line: str) -> None:
    text = (
        line + "\n" + request(steps=1, avg="30.0000", total="30.0010", pixel="31.00") + request(pixel="36.90")
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 0)
    assert run.e2e_ms == pytest.approx(36900.0)  # the client's timer holds no warmup


def test_with_warmup_mode_on_the_first_requests_client_timer_is_not_its_e2e() -> None:
    # 0.5.23's request-mode warmup prints only its bar; the client's timer ran through it.
    text = (
        "sglang generate --model-path x --warmup-mode request\n"
        "Warmup requests:   0%|          | 0/1 [00:00<?, ?req/s]"
        "\rWarmup requests: 100%|██████████| 1/1 [00:31<00:00, 31.20s/req, warmup req (1024x1024, 1 step), last=31.02s]\n"
        f"{TS}The server is fired up and ready to roll!\n" + request(pixel="36.90")
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.e2e_ms is None
    assert any("includes the warmup request" in w for w in run.warnings)


def test_newer_warmup_progress_lines_with_suppressed_warmup_stages() -> None:
    text = (
        f"{TS}Warmup requests: 0/1 warmup req (1024x1024, 1 step)\n"
        "100%|██████████| 1/1 [00:30<00:00, 30.00s/it]\n"
        f"{TS}Warmup requests: 1/1 warmup req (1024x1024, 1 step)\n" + request()
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert (run.denoise_step_count, run.denoise_step_mean_ms) == (20, 250.0)


def test_warmup_tqdm_bar_marks_the_warmup() -> None:
    text = (
        "Warmup requests:   0%|          | 0/1 [00:00<?, ?req/s, warmup req (1024x1024, 1 step)]\n"
        + request(steps=1, avg="30.0000", total="30.0010", pixel=None)
        + "Warmup requests: 100%|██████████| 1/1 [00:31<00:00, 31.20s/req, warmup req (1024x1024, 1 step)]\n"
        + request(steps=20)
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests, run.denoise_step_mean_ms) == (2, 1, 250.0)


def test_only_a_warmup_ran() -> None:
    text = f"{TS}Processing warmup req...\n" + request(1, "30.0000", "30.0010", None)
    text += f"{TS}Warmup req processed in 31.20 seconds\n"
    run = parse_sglang_log(text)
    failed(run)
    assert run.failure_reason == "only the warmup request ran its denoising stage; no measured request in log"


def test_complete_warmup_then_cut_off_real_request_fails() -> None:
    text = f"{TS}Processing warmup req...\n" + request(1, "30.0000", "30.0010", None)
    text += (
        f"{TS}Warmup req processed in 31.20 seconds\n{TS}Sampling params:\n{TS}[DenoisingStage] started...\n"
    )
    text += "  0%|          | 0/20 [00:00<?, ?it/s]\n 35%|███▌      | 7/20 [00:01<00:03,  4.00it/s]\n"
    run = parse_sglang_log(text)
    failed(run)
    assert (
        run.failure_reason
        == "log ends mid-denoise: DenoisingStage started but never finished (cut off at step 7/20)"
    )
    assert (run.requests_seen, run.warmup_requests) == (2, 1)


def test_several_measured_requests_report_the_last() -> None:
    text = (
        f"{TS}Processing prompt 1/3: a\n"
        + request(avg="0.2500", total="5.0000", pixel="5.50")
        + f"{TS}Processing prompt 2/3: b\n"
        + request(avg="0.2600", total="5.2000", pixel="5.70")
        + f"{TS}Processing prompt 3/3: c\n"
        + request(avg="0.2700", total="5.4000", pixel="5.90")
        + f"{TS}Completed batch processing. Generated 3 outputs in 17.10 seconds\n"
    )
    run = parse_sglang_log(text)
    assert (run.requests_seen, run.warmup_requests) == (3, 0)
    assert (run.denoise_step_mean_ms, run.denoise_stage_ms, run.e2e_ms) == (270.0, 5400.0, 5900.0)
    assert "3 measured requests in log; reporting the last" in run.warnings


def test_invalid_numbers_are_ignored_with_a_warning() -> None:
    run = parse_sglang_log(denoise(20, avg="nan", total="5.0000"))
    assert run.status is RunStatus.OK
    assert run.denoise_step_mean_ms == 250.0  # derived: 5000 ms / 20 steps
    assert any("ignored invalid value 'nan'" in w for w in run.warnings)
    assert any("derived it as denoising stage time / step count" in w for w in run.warnings)

    run = parse_sglang_log(denoise(20, avg="0.2500", total="-5.0000"))
    assert (run.denoise_step_mean_ms, run.denoise_stage_ms) == (250.0, None)
    assert any("ignored invalid value '-5.0000'" in w for w in run.warnings)

    run = parse_sglang_log(denoise(20, avg="inf", total="inf"))
    failed(run)
    assert run.failure_reason == (
        "denoising step time unknown: no valid 'average time per step', and no valid stage time with a step count"
    )


def test_negative_peak_falls_back_to_the_run_summary() -> None:
    text = request().replace("Peak GPU memory: 10.00 GB", "Peak GPU memory: -1.00 GB")
    text += f"{TS}Memory usage - Max peak: 10230.50 MB, Avg peak: 10230.50 MB\n"
    run = parse_sglang_log(text)
    assert run.peak_memory_mb == pytest.approx(10230.5)
    assert any("ignored invalid value '-1.00'" in w for w in run.warnings)


def test_average_and_stage_time_that_disagree() -> None:
    run = parse_sglang_log(denoise(20, avg="0.2500", total="6.0000"))
    assert run.status is RunStatus.OK
    assert any("differs from the denoising stage time" in w for w in run.warnings)


def test_step_count_from_sampling_params_when_no_bar() -> None:
    text = (
        f"{TS}Sampling params:\n                  infer_steps: 28\n{TS}[DenoisingStage] started...\n"
        f"{TS}[DenoisingStage] average time per step: 0.1000 seconds\n"
        f"{TS}[DenoisingStage] finished in 2.8100 seconds\n"
    )
    run = parse_sglang_log(text)
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (28, 100.0, 2810.0)


def test_traceback_before_any_request() -> None:
    text = (
        f"{TS}Scheduler bind at endpoint: tcp://127.0.0.1:5555\n"
        "Traceback (most recent call last):\n"
        '  File "/sglang/multimodal_gen/runtime/loader.py", line 88, in load\n'
        "    raise ValueError(msg)\n"
        "ValueError: Unsupported model path: Qwen/Qwen-Imag\n"
    )
    run = parse_sglang_log(text)
    failed(run)
    assert run.failure_reason == (
        "Python exception and no measured request completed: ValueError: Unsupported model path: Qwen/Qwen-Imag"
    )


def test_traceback_after_the_measured_request_is_only_a_warning() -> None:
    text = request() + 'Traceback (most recent call last):\n  File "x.py", line 1\nKeyboardInterrupt\n'
    run = parse_sglang_log(text)
    assert run.status is RunStatus.OK
    assert run.denoise_step_mean_ms == 250.0
    assert any("KeyboardInterrupt" in w for w in run.warnings)


def test_oom_traceback_without_a_stage_error_line() -> None:
    text = (
        f"{TS}[DenoisingStage] started...\n"
        "  0%|          | 0/20 [00:00<?, ?it/s]\n 10%|█         | 2/20 [00:01<00:09,  1.90it/s]\n"
        "Traceback (most recent call last):\n"
        '  File "denoising.py", line 10, in forward\n'
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has ...\n"
    )
    run = parse_sglang_log(text)
    failed(run)
    assert (
        run.failure_reason == "CUDA out of memory in DenoisingStage at step 2/20 (tried to allocate 2.00 GiB)"
    )


def test_stage_error_reported_in_seconds() -> None:
    text = (
        f"{TS}[TextEncodingStage] started...\n"
        f"{TS}[TextEncodingStage] Error during execution after 1.5000 seconds: tokenizer not found\n"
    )
    run = parse_sglang_log(text)
    failed(run)
    assert run.failure_reason == "TextEncodingStage failed after 1.50 s: tokenizer not found"


def test_failed_warmup_then_good_request() -> None:
    text = (
        f"{TS}Processing warmup req...\n{TS}[DenoisingStage] started...\n"
        f"{TS}[DenoisingStage] Error during execution after 50.0000 ms: CUDA out of memory. Tried to allocate 1.00 GiB\n"
        f"{TS}Warmup req processing failed\n" + request()
    )
    run = parse_sglang_log(text)
    assert run.status is RunStatus.OK
    assert (run.requests_seen, run.warmup_requests, run.denoise_step_mean_ms) == (2, 1, 250.0)
    assert (
        "warmup request failed: CUDA out of memory in DenoisingStage (tried to allocate 1.00 GiB)"
        in run.warnings
    )


def test_failed_request_after_a_complete_one_is_a_warning() -> None:
    text = (
        request(pixel="5.50")
        + f"{TS}Sampling params:\n{TS}[DenoisingStage] started...\n"
        + f"{TS}[DenoisingStage] Error during execution after 10.0000 ms: boom\n"
        + f"{TS}Failed to generate output for prompt 2: boom\n"
    )
    run = parse_sglang_log(text)
    assert run.status is RunStatus.OK
    assert run.e2e_ms == pytest.approx(5500.0)
    assert "request 2 of 2 did not complete: DenoisingStage failed after 0.01 s: boom" in run.warnings


def test_log_ends_before_denoising() -> None:
    run = parse_sglang_log(f"{TS}[TextEncodingStage] started...\n")
    failed(run)
    assert run.failure_reason == "log ends in TextEncodingStage, before any denoising stage ran"


def test_excerpt_starting_after_the_started_line() -> None:
    text = (
        "100%|██████████| 50/50 [00:13<00:00,  3.79it/s]\n"
        f"{TS}[DenoisingStage] average time per step: 0.2637 seconds\n"
        f"{TS}[DenoisingStage] finished in 13.1895 seconds\n"
    )
    run = parse_sglang_log(text)
    assert (run.denoise_step_mean_ms, run.denoise_stage_ms) == (263.7, 13189.5)
