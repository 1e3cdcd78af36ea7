"""The agent's jobs on a terminal: one rich progress line per job (its phase, the denoise steps as the
benchmark prints them, then its outcome), for ``perftrack runner`` and the demo alike."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from runners.agent import JobEvents
from runners.jobspec import JobSpec

# tqdm's "12/50 [" as sglang (and the toy) print it, to follow the denoise loop.
_TQDM = re.compile(r"(\d+)/(\d+) \[")

DoneHook = Callable[[JobSpec, dict[str, Any]], None]


class JobProgress:
    """A progress line per job; ``one_line``: one line reused by every job, hidden by :meth:`hide`."""

    def __init__(self, console: Console, *, one_line: bool = False) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._one_line = one_line
        self._task: TaskID | None = None
        self._label = ""

    def events(self, *, on_done: DoneHook | None = None) -> JobEvents:
        """Callbacks for the agent; ``on_done`` runs after the line shows a job's outcome."""

        def done(job: JobSpec, payload: dict[str, Any]) -> None:
            self.done(job, payload)
            if on_done is not None:
                on_done(job, payload)

        return JobEvents(on_job=self.job, on_phase=self.phase, on_output=self.output, on_done=done)

    def job(self, job: JobSpec) -> None:
        """A job was leased: start its line."""
        self._label = job_label(job)
        if self._one_line and self._task is not None:
            self.progress.remove_task(self._task)  # the previous job's line gives way
        self._task = self.progress.add_task(self._label, total=None)

    def phase(self, job: JobSpec, phase: str) -> None:
        """The job moved on (building, running, uploading, ...)."""
        if self._task is not None:
            self.progress.update(self._task, description=f"{self._label} · {phase}")

    def output(self, line: str) -> None:
        """A line the benchmark printed: a tqdm counter moves the bar."""
        match = _TQDM.search(line)
        if match and self._task is not None:
            self.progress.update(self._task, completed=int(match.group(1)), total=int(match.group(2)))

    def done(self, job: JobSpec, payload: dict[str, Any]) -> None:
        """The job's result is in: show its median step time, or why it failed."""
        if self._task is None:
            return
        self.progress.update(self._task, description=f"{self._label} · {outcome(payload)}")
        if not self._one_line:
            self.progress.stop_task(self._task)
            self._task = None

    def hide(self) -> None:
        """Hide the reused line (``one_line``) once no job runs."""
        if self._task is not None:
            self.progress.update(self._task, visible=False)

    def clear(self) -> None:
        """Forget every line, so that the next ``with progress:`` starts on an empty display."""
        for task in list(self.progress.task_ids):
            self.progress.remove_task(task)
        self._task = None


def job_label(job: JobSpec) -> str:
    """``job 12 #1 nightly qwen-image-t2i-1024 @ abc1234 + #43601``: what the line is about."""
    label = f"job {job.job_id} #{job.attempt} {job.reason} {job.case.slug} @ {job.candidate.base_sha[:7]}"
    if job.candidate.patches:
        label += " + " + ", ".join(_patch_name(patch) for patch in job.candidate.patches)
    return label


def _patch_name(patch: str) -> str:
    """``#43601`` for a pull request's ref (pinned or not), the short sha for a commit."""
    if patch.startswith("refs/pull/"):
        return "#" + patch.split("/")[2]
    return patch[:7]


def outcome(payload: dict[str, Any]) -> str:
    """``263.70 ms/step`` (the median step) for a measured result, else ``failed: <reason>``."""
    value = payload.get("denoise_step_mean_ms")
    steps = payload.get("step_times_ms")
    if isinstance(steps, list) and steps:
        ordered = sorted(float(step) for step in steps)
        value = ordered[len(ordered) // 2]
    if payload.get("status") == "ok" and isinstance(value, float):
        return f"{value:.2f} ms/step"
    return f"failed: {payload.get('failure_reason')}"
