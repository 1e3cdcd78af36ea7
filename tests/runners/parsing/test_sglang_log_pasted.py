"""Logs as people paste them: excerpts that start mid-way, runs pasted back to back, crashes,
warmups only, and what ``perftrack parse-log`` says about each (its JSON and its exit status)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perftrack.cli import app
from perftrack.cli.logs_cmd import EXIT_RUN_FAILED
from runners.parsing import ParsedRun, RunStatus, parse_sglang_log

TS = "[12-31 09:48:32] "


def run_of(steps: int, average_s: float, stage_s: float, *, started: bool = False) -> str:
    """One denoising run as a pasted excerpt: its final bar, average and stage lines."""
    text = f"{TS}[DenoisingStage] started...\n" if started else ""
    return text + (
        f"100%|██████████| {steps}/{steps} [00:13<00:00,  2.06it/s]\n"
        f"{TS}[DenoisingStage] average time per step: {average_s:.4f} seconds\n"
        f"{TS}[DenoisingStage] finished in {stage_s:.4f} seconds\n"
    )


def failed(run: ParsedRun) -> str:
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    return run.failure_reason


# --- 1. a progress bar before the first denoise line


def test_a_bar_before_the_first_denoise_line_gives_the_step_count() -> None:
    run = parse_sglang_log(run_of(28, 0.4853, 13.9935))
    assert run.status is RunStatus.OK
    assert run.denoise_step_count == 28
    assert not any("no tqdm progress bar" in warning for warning in run.warnings)
    # The cross-check of average x steps against the stage total runs: 28 x 485.3 ms is 13.6 s.
    assert not any("differs from the denoising stage" in warning for warning in run.warnings)
    off = parse_sglang_log(run_of(28, 0.4853, 20.0))
    assert any("differs from the denoising stage time" in warning for warning in off.warnings)


def test_a_bar_of_another_stage_is_not_taken_for_the_denoising_loop() -> None:
    text = (
        "Decoding tiles: 100%|██████████| 16/16 [00:01<00:00, 12.0it/s]\n"
        f"{TS}[DecodingStage] finished in 1.2000 seconds\n"
        f"{TS}[DenoisingStage] average time per step: 0.5000 seconds\n"
        f"{TS}[DenoisingStage] finished in 10.0000 seconds\n"
    )
    run = parse_sglang_log(text)
    assert run.denoise_step_count is None
    assert any("no tqdm progress bar" in warning for warning in run.warnings)


# --- 2. back-to-back runs without "started" lines; a new command line


def test_back_to_back_runs_without_started_lines_are_two_requests() -> None:
    text = "sglang generate --model-path Qwen/Qwen-Image --warmup=True\n" + run_of(28, 0.5, 14.0)
    run = parse_sglang_log(text + run_of(50, 0.3, 15.0))
    assert run.requests_seen == 2
    assert (run.denoise_step_count, run.denoise_step_mean_ms, run.denoise_stage_ms) == (50, 300.0, 15000.0)
    assert "2 measured requests in log; reporting the last" in run.warnings
    assert not any("single request" in warning for warning in run.warnings)
    assert [(request.position, request.stored) for request in run.requests] == [(1, False), (2, True)]
    assert run.requests[0].denoise_step_count == 28
    assert run.requests[0].note == "not stored: a later complete request is the one stored"


def test_a_new_command_line_starts_a_new_run() -> None:
    first = "$ sglang generate --model-path black-forest-labs/FLUX.1-dev\n" + run_of(
        50, 0.7, 35.0, started=True
    )
    # The second run prints no stage line the first did not, yet it is a run of its own.
    second = (
        f"$ sglang generate --model-path Qwen/Qwen-Image\n{TS}[DecodingStage] finished in 0.5000 seconds\n"
    )
    run = parse_sglang_log(first + second)
    assert run.requests_seen == 2
    assert run.denoise_step_mean_ms == 700.0
    [measured, cut] = run.requests
    assert measured.stored
    assert (cut.outcome, cut.stored) == ("incomplete", False)


# --- 4 and 5. failures named


def test_a_stage_error_alone_is_the_reason() -> None:
    line = "[05-08 22:54:15] [DenoisingStage] Error during execution after 874.8007 ms: boom\n"
    run = parse_sglang_log(line)
    assert failed(run) == "DenoisingStage failed after 0.87 s: boom"
    assert run.requests_seen == 1


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "[05-08 22:54:15] Rank 0 scheduler is dead. Please check if there are relevant logs.",
            (
                "the scheduler died: Rank 0 scheduler is dead. Please check if there are relevant logs. "
                "(during DenoisingStage at step 10/50)"
            ),
        ),
        (
            "Exit code: -9",
            (
                "a process ended with exit code -9: killed by signal 9 (SIGKILL: often the kernel's "
                "out-of-memory killer"
            ),
        ),
        ("worker exited with code 137", "a process ended with exit code 137: killed by signal 9 (SIGKILL"),
        (
            "Process killed by signal SIGSEGV",
            "a process was killed by signal 11 (SIGSEGV: a crash in native code)",
        ),
        (
            (
                "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                "unhandled system error"
            ),
            "NCCL failure: NCCL error in: ProcessGroupNCCL.cpp:1970",
        ),
        ("worker exited with code 3", "a process ended with exit code 3"),
    ],
)
def test_a_crash_is_named(line: str, reason: str) -> None:
    text = f"{TS}[DenoisingStage] started...\n 20%|██        | 10/50 [00:05<00:20,  2.00it/s]\n{line}\n"
    assert failed(parse_sglang_log(text)).startswith(reason)


def test_the_first_fatal_line_is_the_reason() -> None:
    text = "Exit code: -9\nRank 0 scheduler is dead.\n"
    assert failed(parse_sglang_log(text)).startswith("a process ended with exit code -9")


def test_exit_code_zero_is_no_crash() -> None:
    run = parse_sglang_log(run_of(28, 0.5, 14.0, started=True) + "Exit code: 0\n")
    assert run.status is RunStatus.OK
    assert not any("fatal" in warning for warning in run.warnings)


def test_a_crash_after_the_measurement_is_a_warning() -> None:
    run = parse_sglang_log(run_of(28, 0.5, 14.0, started=True) + "Rank 0 scheduler is dead.\n")
    assert run.status is RunStatus.OK
    assert any(warning.startswith("log reports a fatal error") for warning in run.warnings)


# --- 6. warmups only


def test_a_log_of_warmups_only_says_so() -> None:
    text = f"{TS}Processing warmup req...\n{TS}Warmup req processed in 1.55 seconds\n"
    run = parse_sglang_log(text)
    assert failed(run) == "only warmup requests ran (1 warmup request); no measured request in log"
    assert (run.requests_seen, run.warmup_requests) == (1, 1)


# --- 7. the warmup guess needs evidence


def test_with_warmup_on_two_full_requests_are_both_measured() -> None:
    text = "sglang generate --model-path Qwen/Qwen-Image --warmup\n"
    run = parse_sglang_log(text + run_of(50, 0.31, 15.5, started=True) + run_of(50, 0.30, 15.0, started=True))
    assert (run.requests_seen, run.warmup_requests) == (2, 0)
    assert any("no request looks like a warmup" in warning for warning in run.warnings)
    assert run.denoise_step_mean_ms == 300.0
    assert [request.warmup for request in run.requests] == [False, False]


def test_with_warmup_on_a_one_step_first_request_is_the_warmup() -> None:
    text = "sglang generate --model-path Qwen/Qwen-Image --warmup\n"
    run = parse_sglang_log(text + run_of(1, 30.0, 30.0, started=True) + run_of(50, 0.30, 15.0, started=True))
    assert (run.requests_seen, run.warmup_requests) == (2, 1)
    assert run.requests[0].note.startswith("warmup: never stored")
    assert run.requests[1].stored


# --- the command line: exit status, the requests listed


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_parse_log_exit_status_tells_a_failed_run_from_a_log_it_cannot_read(tmp_path: Path) -> None:
    crashed = tmp_path / "crashed.log"
    crashed.write_text("Rank 0 scheduler is dead. Please check if there are relevant logs.\n")
    code, output = invoke("parse-log", str(crashed))
    assert code == EXIT_RUN_FAILED == 3
    assert json.loads(output)["failure_reason"].startswith("the scheduler died")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert invoke("parse-log", str(empty))[0] == 1
    ok = tmp_path / "ok.log"
    ok.write_text(run_of(28, 0.5, 14.0) + run_of(28, 0.4, 11.2))
    code, output = invoke("parse-log", str(ok))
    assert code == 0
    listed = json.loads(output)["requests"]
    assert [(entry["position"], entry["stored"]) for entry in listed] == [(1, False), (2, True)]
    assert listed[1]["note"] == "stored: the last complete measured request"
    help_text = invoke("parse-log", "--help")[1]
    assert "3 it parsed, and the run failed" in " ".join(help_text.split())


def test_a_bar_flushed_after_its_summary_lines_is_still_its_own() -> None:
    # stderr (tqdm) piped behind stdout: the loop's bar lands after its average and finished lines.
    text = (
        f"{TS}[DenoisingStage] started...\n"
        f"{TS}[DenoisingStage] average time per step: 0.5000 seconds\n"
        f"{TS}[DenoisingStage] finished in 14.0000 seconds\n"
        "100%|██████████| 28/28 [00:14<00:00,  2.00it/s]\n"
    )
    run = parse_sglang_log(text)
    assert run.denoise_step_count == 28
    assert run.requests_seen == 1
