"""What the fake ``sglang generate`` prints in the current era (sglang 0.5.23), line by line.

Every line is one that 0.5.23 logs, with its wording and colour codes (sources named per line;
``tests/contract/sglang`` checks the colour-coded ones against the real package's output). The
numbers are those of the recorded Qwen-Image run at 669a9bd (``qwen_image_669a9bd.log``), so that
both eras measure the same: 0.2637 s a step, a 41.29 s compiling warmup step.

What 0.5.23 does that matters to a measurement, and the fake therefore does too:

- only ``--warmup-mode request`` runs a warmup request in ``generate``; with torch.compile on and
  no mode given the mode becomes ``server``, which only the HTTP server runs, so the measured
  request compiles, yet the summary still says "(with warmup excluded)" whenever the mode is not
  ``off`` (``entrypoints/diffusion_generator.py``, ``_log_summary``);
- a request-based warmup shows only as a tqdm bar "Warmup requests" on stderr (its "k/N" lines
  only when ``CI`` or ``GITHUB_ACTIONS`` is ``true``), then "The server is fired up and ready to
  roll!" (``runtime/server_warmup.py``): a warmup request's own stage records, denoising bar and
  average are not logged (``pipelines_core/stages/base.py``, ``stages/denoising.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# runtime/utils/logging_utils.py
CYAN = "\x1b[1;36m"
GREEN = "\x1b[92m"
RESET = "\x1b[0;0m"

STEP_S = 0.2637  # the measured request's average step
WARMUP_STEP_S = 41.2871  # the compiling first step
STAGES = (
    ("InputValidationStage", 0.0001),
    ("TextEncodingStage", 0.2104),
    ("ConditioningStage", 0.0000),
    ("TimestepPreparationStage", 0.0151),
    ("LatentPreparationStage", 0.0002),
)
DECODING_S = 0.0179
PEAK_MB = 46938.00


def stamp() -> str:
    """sglang's "[MM-DD HH:MM:SS]" record prefix."""
    return time.strftime("[%m-%d %H:%M:%S]")


@dataclass(frozen=True)
class GenerateRun:
    """What one fake ``generate`` does, as its arguments decide."""

    prompt: str
    width: int
    height: int
    steps: int
    warmup_mode: str  # the resolved mode: off, request or server
    server_args: Mapping[str, Any]
    dump_path: str | None = None
    output_path: str | None = None  # the file saved, when --save-output
    step_scale: float = 1.0  # a factor on the measured steps (a planted change)

    @property
    def warms_up(self) -> bool:
        """Whether a warmup request runs before the measured one (only the request mode does)."""
        return self.warmup_mode == "request"

    @property
    def step_times_s(self) -> list[float]:
        """The measured request's steps: the first one compiles when nothing warmed up."""
        times = [STEP_S * self.step_scale] * self.steps
        if not self.warms_up and self.server_args.get("enable_torch_compile"):
            times[0] = WARMUP_STEP_S
        return times


def resolved_warmup_mode(values: Mapping[str, Any]) -> str:
    """0.5.23's ``_adjust_warmup``: an explicit mode, else ``server`` with compile on, else ``off``."""
    mode = values.get("warmup_mode")
    if mode:
        return str(mode)
    return "server" if values.get("enable_torch_compile") else "off"


def _records(lines: Sequence[str]) -> list[str]:
    return [f"{stamp()} {line}" for line in lines]


def _stages_then_denoise(run: GenerateRun, steps: Sequence[float]) -> tuple[list[str], list[str]]:
    """Stage records before the denoising loop, and the loop's own records after its bar."""
    before: list[str] = []
    for name, seconds in STAGES:
        before += [f"[{name}] started...", f"[{name}] finished in {seconds:.4f} seconds"]
    before.append("[DenoisingStage] started...")
    total = sum(steps)
    after = [
        f"[DenoisingStage] average time per step: {total / len(steps):.4f} seconds",
        f"[DenoisingStage] finished in {total:.4f} seconds",
        "[DecodingStage] started...",
        f"[DecodingStage] finished in {DECODING_S:.4f} seconds",
    ]
    return before, after


def bar_frame(
    n: int, total: int, elapsed_s: float, desc: str = "", unit: str = "it", postfix: str = ""
) -> str:
    """One tqdm frame as it is written to a pipe: a carriage return, then the bar, no newline."""
    prefix = f"{desc}: " if desc else ""
    if n == 0:
        return f"\r{prefix}  0%|          | 0/{total} [00:00<?, ?{unit}/s]"
    rate = f"{n / elapsed_s:.2f}{unit}/s" if elapsed_s < n else f"{elapsed_s / n:.2f}s/{unit}"
    tail = f", {postfix}" if postfix else ""
    done = int(10 * n / total)
    cells = "█" * done + " " * (10 - done)
    return f"\r{prefix}{100 * n // total:3d}%|{cells}| {n}/{total} [00:{min(int(elapsed_s), 59):02d}<00:00, {rate}{tail}]"


@dataclass(frozen=True)
class Chunk:
    """Text written to one stream; the fake writes the chunks in order, flushing each."""

    stream: str  # "stdout" (log records) or "stderr" (tqdm)
    text: str


def _out(lines: Sequence[str]) -> Chunk:
    return Chunk("stdout", "".join(f"{line}\n" for line in _records(lines)))


def _denoise(run: GenerateRun, steps: Sequence[float]) -> list[Chunk]:
    before, after = _stages_then_denoise(run, steps)
    total = len(steps)
    return [
        _out(before),
        Chunk("stderr", bar_frame(0, total, 0.0) + bar_frame(total, total, sum(steps)) + "\n"),
        _out(after),
    ]


def warmup_bar(n: int, shape: str, last_s: float | None = None, kind: str = "warmup req") -> str:
    """The "Warmup requests" bar's frame after ``n`` of 1 (runtime/server_warmup.py)."""
    postfix = f"{kind} ({shape}, 1 step)" + (f", last={last_s:.2f}s" if last_s is not None else "")
    return bar_frame(n, 1, last_s or 0.0, "Warmup requests", "req", postfix)


def generate_log(run: GenerateRun) -> list[Chunk]:
    """What a successful ``sglang generate`` run writes, in order."""
    chunks = [
        _out(
            [
                "server_args: " + json.dumps(dict(run.server_args), ensure_ascii=False),
                "Pipeline instantiated",
                "Worker 0: Initialized device, model, and distributed environment.",
                f"Processing prompt 1/1: {run.prompt}",
            ]
        )
    ]
    shape = f"{run.width}x{run.height}"
    if run.warms_up:
        # The scheduler makes the bar, runs the warmup copy (whose stage records, denoising bar and
        # average 0.5.23 keeps quiet: stages/base.py, denoising.py), then advances the bar.
        chunks.append(Chunk("stderr", warmup_bar(0, shape)))
        chunks.append(Chunk("stderr", warmup_bar(1, shape, WARMUP_STEP_S + 4.8) + "\n"))
        chunks.append(_out(["The server is fired up and ready to roll!"]))
    steps = run.step_times_s
    chunks += _denoise(run, steps)
    total_s = sum(steps) + sum(seconds for _, seconds in STAGES) + DECODING_S
    summary: list[str] = []
    if run.dump_path:
        summary.append(f"Metrics dumped to: {CYAN}{run.dump_path}{RESET}")
    if run.output_path:
        summary.append(f"Output saved to {CYAN}{run.output_path}{RESET}")
    summary.append(f"Pixel data generated successfully in {GREEN}{total_s + 0.3:.2f}{RESET} seconds")
    if run.warmup_mode != "off":  # said even when nothing warmed up (the server mode)
        summary.append(
            f"Warmed-up request processed in {GREEN}{total_s:.2f}{RESET} seconds (with warmup excluded)"
        )
    summary.append(f"Memory usage - Max peak: {PEAK_MB:.2f} MB, Avg peak: {PEAK_MB:.2f} MB")
    chunks.append(_out(summary))
    return chunks


def perf_dump(run: GenerateRun, *, commit: str, recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--perf-dump-path`` JSON in 0.5.23's layout (``PerformanceLogger.dump_benchmark_report``).

    ``recorded`` is the 669a9bd run's dump, whose step times are kept; the first step compiles
    when no warmup ran, as in the log.
    """
    dump = json.loads(json.dumps(recorded))
    dump["commit_hash"] = commit
    steps = dump["denoise_steps_ms"]
    if not run.warms_up and run.server_args.get("enable_torch_compile"):
        steps[0]["duration_ms"] = WARMUP_STEP_S * 1000.0
    for snapshot in dump.get("memory_checkpoints", {}).values():
        snapshot.setdefault("peak_host_anon_mb", 0.0)  # 0.5.23 adds it; 0.0 where no sampler ran
    dump["meta"] = {"prompt": run.prompt, "model": run.server_args.get("model_path")}
    return dict(dump)
