"""``--perf-dump-path``: the measured request's stage and step times as sglang's PerformanceLogger writes them."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .compile_stats import DynamoCounters


@dataclass
class RequestTimings:
    """Wall times of one request, in milliseconds, measured with ``time.perf_counter``."""

    stages: list[tuple[str, float]] = field(default_factory=list)
    denoise_steps_ms: list[float] = field(default_factory=list)
    total_duration_ms: float = 0.0


def write_perf_dump(
    path: str,
    timings: RequestTimings,
    counters: DynamoCounters,
    measured: DynamoCounters,
    meta: dict[str, object],
) -> None:
    """Write the dump: stages under ``steps``, every denoising step under ``denoise_steps_ms``."""
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
        "meta": meta,
        "dynamo_counters": compile_counters,
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
