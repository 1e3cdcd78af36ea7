"""Small builders of valid upload bodies for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.parsing import parse_run
from runners.payload import CommitInfo, as_body, import_key, import_result
from tracker.statistics.changepoints import Change
from wire import JobResultIn


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


EXAMPLES = Path(__file__).resolve().parent / "data" / "sglang"
REGRESSION = [
    (
        "qwen_image_669a9bd.log",
        "669a9bd",
        "2026-05-18T09:00:00+00:00",
        "Baseline before the fused norm change",
    ),
    (
        "qwen_image_4739f2e.log",
        "4739f2e",
        "2026-05-19T09:00:00+00:00",
        "Fuse RMSNorm (torch._dynamo.disable)",
    ),
    ("qwen_image_fix.log", "9c1d5e2", "2026-05-21T09:00:00+00:00", "Fused norm as torch.library.custom_op"),
]


def regression_payloads(title_override: str | None = None) -> list[dict[str, Any]]:
    """Upload bodies of the three Qwen-Image regression logs, parsed by the real parser."""
    bodies = []
    for log, sha, when, title in REGRESSION:
        text = (EXAMPLES / log).read_text()
        parsed = parse_run(text)
        bodies.append(
            as_body(
                import_result(
                    parsed,
                    case="qwen-image-t2i-1024",
                    hardware="H200",
                    commit=CommitInfo(
                        sha=sha, committed_at=when, title=title_override or title, author_name="A. Dev"
                    ),
                    idempotency_key=import_key(
                        case="qwen-image-t2i-1024",
                        hardware="H200",
                        commit_sha=sha,
                        patches=[],
                        log_text=text,
                        dump_text="",
                    ),
                    raw_log=text,
                )
            )
        )
    return bodies


def job_result(attempt: int, **overrides: Any) -> JobResultIn:
    """A valid upload for one attempt of a job."""
    body: dict[str, Any] = {
        "attempt": attempt,
        "status": "ok",
        "step_times_ms": [30.0, 31.0, 31.5, 30.8],
        "raw_log": "[06-01 12:00:00] [DenoisingStage] finished in 0.1233 seconds\n",
    }
    body.update(overrides)
    if body["status"] == "failed":
        body["step_times_ms"] = []
    return JobResultIn.model_validate(body)


def suspect_change(
    index: int, before: float, after: float, *, runs_before: int = 20, runs_after: int = 1
) -> Change:
    """A suspect detection reported at commit ``index``: from ``before`` to ``after`` (ms)."""
    return Change(
        index=index,
        before=before,
        after=after,
        change_pct=(after / before - 1.0) * 100.0,
        z=None,
        p_value=None,
        established=False,
        single_run_basis=False,
        runs_before=runs_before,
        runs_after=runs_after,
        kind="suspect",
    )
