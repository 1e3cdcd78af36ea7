"""Small builders of valid upload bodies for tests."""

from __future__ import annotations

from typing import Any


def result_body(**overrides: Any) -> dict[str, Any]:
    """A valid ``POST /api/v1/results`` body for the Qwen-Image case; override any field."""
    body: dict[str, Any] = {
        "case": "qwen-image-t2i-1024",
        "hardware": "H200",
        "commit": {"sha": "669a9bd", "title": "Baseline", "committed_at": "2026-03-01T10:00:00Z"},
        "status": "ok",
        "step_times_ms": [250.0, 263.0, 264.0, 263.5, 263.9],
        "denoise_step_mean_ms": 263.7,
        "denoise_stage_ms": 13189.5,
        "stages": [{"name": "DenoisingStage", "duration_ms": 13189.5}],
        "raw_log": "[03-01 10:00:00] [DenoisingStage] finished in 13.1895 seconds\n",
    }
    body.update(overrides)
    return body
