"""``/runs/{id}``: one run's numbers, per-step chart, stages, compiler, environment, candidate and log."""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from tracker.ingest.conditions import (
    CONTENTION_SHARE_PCT,
    STEAL_PCT,
    RunConditions,
    conditions_from_environment,
)
from tracker.models import RunStage
from tracker.queue.jobs import get_job
from tracker.views.run_files import evidence_of_job, run_file, run_files
from tracker.views.runs import get_run, run_output, run_output_check
from web.deps import SessionDep
from web.pages.templating import templates
from web.schemas.params import RunId

router = APIRouter()

# Identity of the machine and software, in reading order: (environment key, label).
ENVIRONMENT_ROWS = (
    ("gpu", "GPU"),
    ("gpu_count", "GPU count"),
    ("gpu_ids", "GPU ids"),
    ("gpu_driver", "Driver"),
    ("cuda_version", "CUDA (driver)"),
    ("torch", "torch"),
    ("torch_cuda", "torch CUDA"),
    ("sglang", "sglang"),
    ("python", "Python"),
    ("host", "Host"),
    ("os", "OS"),
    ("cpu_model", "CPU"),
    ("cpu_count", "CPU cores"),
)
# GPU state sampled before and after the run: (key prefix, label, unit).
GPU_STATE_ROWS = (
    ("gpu_sm_clock_mhz", "SM clock", "MHz"),
    ("gpu_mem_clock_mhz", "Memory clock", "MHz"),
    ("gpu_temperature_c", "Temperature", "°C"),
    ("gpu_power_w", "Power draw", "W"),
)
# Lines the log parser reads numbers from; shown highlighted so a reader sees what was measured.
_TIMESTAMP = re.compile(r"^\[\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\]\s")
_STAGE = re.compile(r"\[\w+Stage\] (?:finished|started|average)", re.IGNORECASE)
_STEP = re.compile(r"\d+/\d+ \[[\d:]+<|\bstep\b.*\b(?:ms|s)\b|denoise", re.IGNORECASE)
_ERROR = re.compile(r"error|traceback|exception|out of memory|killed|failed", re.IGNORECASE)
MAX_LOG_LINES = 20_000


@dataclass(frozen=True)
class LogLine:
    """One log line split for display; ``kind`` is ``stage``, ``step``, ``error`` or ``plain``."""

    number: int
    timestamp: str
    text: str
    kind: str


@dataclass(frozen=True)
class ConditionRow:
    """One line of the measuring-conditions table; ``warn`` when it is past hygiene's threshold."""

    label: str
    value: str
    warn: bool = False


@dataclass(frozen=True)
class GpuConditionRow:
    """One GPU before or after the run, as displayed."""

    gpu: str
    when: str
    sm_clock: str
    temperature: str
    reasons: str
    throttling: bool


@dataclass(frozen=True)
class StageBar:
    """A pipeline stage as a horizontal bar: width relative to the slowest, share of the total."""

    name: str
    duration_ms: float
    width_pct: float
    share_pct: float


def log_lines(raw_log: str) -> list[LogLine]:
    """The log split in lines (tqdm's carriage returns too), each classified for highlighting."""
    lines = []
    for number, line in enumerate(raw_log.splitlines()[:MAX_LOG_LINES], start=1):
        match = _TIMESTAMP.match(line)
        timestamp, text = (match.group(0), line[match.end() :]) if match else ("", line)
        if _STAGE.search(text):
            kind = "stage"
        elif _ERROR.search(text):
            kind = "error"
        elif _STEP.search(text):
            kind = "step"
        else:
            kind = "plain"
        lines.append(LogLine(number=number, timestamp=timestamp, text=text, kind=kind))
    return lines


def stage_bars(stages: list[RunStage]) -> list[StageBar]:
    """Stages in pipeline order, scaled to the slowest one."""
    slowest = max((stage.duration_ms for stage in stages), default=0.0)
    total = sum(stage.duration_ms for stage in stages)
    return [
        StageBar(
            name=stage.name,
            duration_ms=stage.duration_ms,
            width_pct=stage.duration_ms / slowest * 100 if slowest else 0.0,
            share_pct=stage.duration_ms / total * 100 if total else 0.0,
        )
        for stage in stages
    ]


def _display(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(_display(item) for item in value) or "—"
    return str(value)


def _whole(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def environment_tables(
    environment: Mapping[str, Any],
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(identity rows, GPU state rows with before/after, every other key), as display strings."""
    used: set[str] = set()
    identity = []
    for key, label in ENVIRONMENT_ROWS:
        if key in environment:
            identity.append((label, _display(environment[key])))
            used.add(key)
    state = []
    for prefix, label, unit in GPU_STATE_ROWS:
        before, after = f"{prefix}_before", f"{prefix}_after"
        if before in environment or after in environment:
            state.append(
                (f"{label} ({unit})", _display(environment.get(before)), _display(environment.get(after)))
            )
            used.update((before, after))
    used.add("conditions")  # shown in its own table
    other = [(key, _display(value)) for key, value in sorted(environment.items()) if key not in used]
    return identity, state, other


def condition_rows(conditions: RunConditions) -> tuple[list[ConditionRow], list[GpuConditionRow]]:
    """The CPU side (load, other processes, steal) and the GPUs' clocks and throttle reasons."""
    rows: list[ConditionRow] = []
    cpu = conditions.cpu
    if cpu is not None:
        rows.append(
            ConditionRow(
                "Other processes' CPU",
                f"{cpu.other_cores:.2f} cores ({cpu.other_share_pct:.0f} % of {cpu.cpu_count})",
                warn=cpu.other_share_pct >= CONTENTION_SHARE_PCT,
            )
        )
        if cpu.benchmark_cores is not None:
            rows.append(ConditionRow("Benchmark's CPU", f"{cpu.benchmark_cores:.2f} cores"))
        if cpu.steal_pct is not None:
            rows.append(ConditionRow("CPU steal", f"{cpu.steal_pct:.1f} %", warn=cpu.steal_pct >= STEAL_PCT))
        for label, load in (
            ("Load average before", cpu.loadavg_before),
            ("Load average after", cpu.loadavg_after),
        ):
            if load:
                rows.append(
                    ConditionRow(f"{label} (1, 5, 15 min)", ", ".join(f"{value:.2f}" for value in load))
                )
        if cpu.window_s is not None:
            rows.append(ConditionRow("Sampled over", f"{cpu.window_s:.1f} s"))
    rows.extend(ConditionRow("Not recorded", error) for error in conditions.errors)
    gpus = [
        GpuConditionRow(
            gpu="?" if gpu.index is None else str(gpu.index),
            when=gpu.when,
            sm_clock=f"{_whole(gpu.sm_clock_mhz)} / {_whole(gpu.max_sm_clock_mhz)}",
            temperature=_whole(gpu.temperature_c),
            reasons=", ".join(gpu.throttle_reasons) or "none",
            throttling=bool(gpu.throttling),
        )
        for gpu in conditions.gpus
    ]
    return rows, gpus


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: RunId, session: SessionDep) -> HTMLResponse:
    """Run detail: why it measured what it did, in one page."""
    run = get_run(session=session, run_id=run_id)
    artifacts = run.artifacts
    steps = [float(value) for value in artifacts.step_times_ms]
    identity, gpu_state, other_environment = environment_tables(artifacts.environment)
    job = get_job(session=session, job_id=run.job_id) if run.job_id is not None else None
    cpu_conditions, gpu_conditions = condition_rows(conditions_from_environment(artifacts.environment))
    return templates.TemplateResponse(
        request,
        "run.html",
        {
            "run": run,
            "job": job,
            "artifacts": artifacts,
            "steps": steps,
            "step_chart": {
                "steps": steps,
                "median": statistics.median(steps) if steps else None,
                "steady": run.denoise_step_steady_ms,
            },
            "stages": stage_bars(list(run.stages)),
            "identity": identity,
            "gpu_state": gpu_state,
            "other_environment": other_environment,
            "cpu_conditions": cpu_conditions,
            "gpu_conditions": gpu_conditions,
            "log": log_lines(artifacts.raw_log),
            "files": run_files(session=session, run_id=run.id),
            "output": run_output(session=session, run_id=run.id),
            "output_check": run_output_check(session=session, run=run),
            "evidence": evidence_of_job(session=session, job_id=run.job_id),
            "title": f"Run {run.id}",
        },
    )


@router.get("/runs/{run_id}/files/{name}")
def run_file_download(run_id: RunId, name: str, session: SessionDep) -> Response:
    """A file the run uploaded, as an attachment (a ``.json.gz`` trace opens in Perfetto)."""
    found = run_file(session=session, run_id=run_id, name=name)
    return Response(
        content=found.content,
        media_type=found.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{found.name}"',
            "X-Content-Type-Options": "nosniff",
        },
    )
