"""``--perf-dump-path``: the measured request's stage and step times as sglang's PerformanceLogger writes them."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from .compile_stats import DynamoCounters


class StepClock(StrEnum):
    """What ``denoise_steps_ms`` measures."""

    THREAD_CPU = "thread_cpu"  # CPU time of the thread running the step (torch on one thread)
    WALL = "wall"  # time.perf_counter


@dataclass
class RequestTimings:
    """Times of one request, in milliseconds.

    Stages and the total are wall times (``time.perf_counter``); each denoising step is timed by
    ``step_clock``, and its wall time is kept in ``denoise_steps_wall_ms`` as well.
    """

    stages: list[tuple[str, float]] = field(default_factory=list)
    denoise_steps_ms: list[float] = field(default_factory=list)
    denoise_steps_wall_ms: list[float] = field(default_factory=list)
    step_clock: str = StepClock.WALL.value
    total_duration_ms: float = 0.0


def write_perf_dump(
    path: str,
    timings: RequestTimings,
    counters: DynamoCounters,
    measured: DynamoCounters,
    meta: dict[str, object],
) -> None:
    """Write the dump: stages under ``steps``, every denoising step under ``denoise_steps_ms``.

    ``denoise_step_clock`` says what the step times measure; ``denoise_steps_wall_ms`` holds
    the same steps' wall times, so that time taken by other processes can be told apart.
    """
    compile_counters: dict[str, object] = {**counters.as_dict(), "measured_request": measured.as_dict()}
    document = {
        "timestamp": datetime.now(UTC).isoformat(),
        "request_id": str(uuid.uuid4()),
        "commit_hash": os.environ.get("SGLANG_GIT_COMMIT"),
        "tag": "cli_generate",
        "total_duration_ms": round(timings.total_duration_ms, 6),
        "steps": [{"name": name, "duration_ms": round(ms, 6)} for name, ms in timings.stages],
        "denoise_steps_ms": [
            {"step": index, "duration_ms": round(ms, 6)} for index, ms in enumerate(timings.denoise_steps_ms)
        ],
        "denoise_step_clock": timings.step_clock,
        "denoise_steps_wall_ms": [round(ms, 6) for ms in timings.denoise_steps_wall_ms],
        "meta": meta,
        "dynamo_counters": compile_counters,
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
