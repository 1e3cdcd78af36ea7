"""Runs for the diagnosis tests, made from the recorded Qwen-Image run through the real parser.

The base is ``tests/data/sglang/qwen_image_669a9bd.log`` with its perf dump (50 denoise steps,
7 stages, memory checkpoints: Qwen-Image-2512 on an H200). A :class:`Shape` says how a commit's
runs differ from it (steady-state steps, step 0, a stage, peak memory, compile counters, the GPU
conditions the runner recorded); each run gets a small seeded jitter, its dump is parsed with the
log by :func:`runners.parsing.parse_run`, and the import is stored by
:func:`tracker.workflows.results.store_result`, as ``perftrack import-log`` would. The regressed
shape's log is ``qwen_image_4739f2e.log`` (0.2876 s/step).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from runners.parsing import parse_run
from runners.payload import CommitInfo, as_body, import_key, import_result
from tests.conftest import DATA
from tests.factories import job_result
from tests.tracker.bench import LIMITS
from tracker.models import Run
from tracker.workflows.results import store_result
from wire import JobResultIn, ResultIn

CASE = "qwen-image-t2i-1024"
HARDWARE = "H200"
SGLANG = DATA / "sglang"
GOOD_LOG = (SGLANG / "qwen_image_669a9bd.log").read_text()
BAD_LOG = (SGLANG / "qwen_image_4739f2e.log").read_text()
DUMP: dict[str, Any] = json.loads((SGLANG / "perf_dump_qwen_image_669a9bd.json").read_text())
T0 = dt.datetime(2026, 5, 18, 9, 0, tzinfo=dt.UTC)
# The graph-break incident on the H200: 263.7 ms → 287.6 ms per denoise step.
GRAPH_BREAK_FACTOR = 287.6 / 263.7
# The offload incident: 1.67 s → 2.15 s per request once every block ran as split graphs.
OFFLOAD_FACTOR = 2.15 / 1.67


@dataclass(frozen=True)
class Shape:
    """How a commit's runs differ from the recorded 669a9bd run."""

    steady: float = 1.0  # factor on steps 1..n-1
    first: float = 1.0  # factor on step 0
    stages: Mapping[str, float] = field(default_factory=dict)  # factor per stage other than denoise
    memory: float = 1.0  # factor on peak memory
    compile: Mapping[str, int] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)
    log: str = GOOD_LOG


WHOLE_GRAPH = {"graph_breaks": 0, "unique_graphs": 1, "frames_compiled": 1, "recompiles": 0}


def gpu_conditions(
    sm_clock_mhz: float, *, throttle: tuple[str, ...] = (), max_clock_mhz: float = 1980
) -> dict[str, Any]:
    """An environment as the runner records it: one H200, busy at ``sm_clock_mhz`` after the run."""
    snapshot = {
        "index": 0,
        "sm_clock_mhz": sm_clock_mhz,
        "max_sm_clock_mhz": max_clock_mhz,
        "temperature_c": 61,
    }
    return {
        "gpu": "NVIDIA H200",
        "gpu_count": 1,
        "gpu_driver": "570.124.06",
        "conditions": {
            "gpu": {
                "before": [{**snapshot, "sm_clock_mhz": 345, "throttle_reasons": ["gpu_idle"]}],
                "after": [{**snapshot, "throttle_reasons": list(throttle)}],
            }
        },
    }


def dump_text(shape: Shape, *, sha: str, rng: random.Random) -> str:
    """The recorded perf dump reshaped: steps and stages scaled, each value jittered by ~0.2 %."""
    dump = copy.deepcopy(DUMP)
    dump["commit_hash"] = sha
    for step in dump["denoise_steps_ms"]:
        factor = shape.first if step["step"] == 0 else shape.steady
        step["duration_ms"] = round(step["duration_ms"] * factor * (1 + rng.gauss(0, 0.002)), 4)
    denoise = sum(step["duration_ms"] for step in dump["denoise_steps_ms"])
    for stage in dump["steps"]:
        if stage["name"] == "DenoisingStage":
            stage["duration_ms"] = denoise
        else:
            stage["duration_ms"] *= shape.stages.get(stage["name"], 1.0) * (1 + rng.gauss(0, 0.002))
    for checkpoint in dump["memory_checkpoints"].values():
        for key in ("peak_allocated_mb", "peak_reserved_mb"):
            checkpoint[key] = round(checkpoint[key] * shape.memory, 2)
    return json.dumps(dump)


def result_of(
    shape: Shape, *, sha: str, index: int, run: int, rng: random.Random, case: str = CASE
) -> ResultIn:
    """One import of a commit's run in ``shape``."""
    text = dump_text(shape, sha=sha, rng=rng)
    parsed = parse_run(shape.log, text)
    result = import_result(
        parsed,
        case=case,
        hardware=HARDWARE,
        commit=CommitInfo(
            sha=sha,
            committed_at=(T0 + dt.timedelta(days=index)).isoformat(),
            title=f"commit {index}",
            author_name="A. Dev",
        ),
        idempotency_key=import_key(
            case=case, hardware=HARDWARE, commit_sha=sha, patches=[], log_text=f"{run}", dump_text=text
        ),
        raw_log=shape.log,
        perf_dump=json.loads(text),
        environment=dict(shape.environment),
    )
    return ResultIn.model_validate({**as_body(result), "compile": dict(shape.compile)})


def sha_of(index: int) -> str:
    """A commit sha for position ``index`` in the history."""
    return f"{index:07x}" + "d" * 33


def store_commit(
    session: Session, index: int, shape: Shape, *, runs: int = 3, seed: int = 0, case: str = CASE
) -> list[Run]:
    """Store ``runs`` imported runs of commit ``index`` in ``shape`` (on ``case``, H200)."""
    rng = random.Random(seed * 1000 + index)
    return [
        store_result(
            session=session,
            result=result_of(shape, sha=sha_of(index), index=index, run=run, rng=rng, case=case),
            limits=LIMITS,
        ).run
        for run in range(runs)
    ]


def history(
    session: Session, shapes: list[Shape], *, runs: int = 3, seed: int = 0, case: str = CASE
) -> list[list[Run]]:
    """Commits 0, 1, … in order, each measured ``runs`` times in its shape."""
    return [
        store_commit(session, index, shape, runs=runs, seed=seed, case=case)
        for index, shape in enumerate(shapes)
    ]


def job_upload(shape: Shape, *, attempt: int, rng: random.Random) -> JobResultIn:
    """A runner's upload of a run in ``shape`` (for comparison rounds)."""
    parsed = parse_run(shape.log, dump_text(shape, sha="0" * 40, rng=rng))
    return job_result(
        attempt,
        step_times_ms=list(parsed.step_times_ms),
        stages=[{"name": stage.name, "duration_ms": stage.duration_ms} for stage in parsed.stages],
        denoise_stage_ms=parsed.denoise_stage_ms,
        peak_memory_mb=parsed.peak_memory_mb,
        compile=dict(shape.compile),
        environment=dict(shape.environment),
    )
