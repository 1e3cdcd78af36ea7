"""The demo's CPU runner: a real agent in this process, drained phase by phase with rich progress."""

from __future__ import annotations

import re
from pathlib import Path

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
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from runners.agent import Agent, AgentConfig, JobEvents
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.jobspec import JobSpec
from runners.workloads.preload import DEMO_PRELOAD
from runners.workloads.registry import default_workloads
from tracker.models import Job, JobState

HARDWARE = "cpu"
RUNNER_NAME = "demo-cpu-runner"
# The toy times its steps in its thread's CPU time, so other processes' CPU use neither flags its
# runs (tracker/hygiene.py) nor is worth waiting out: a runner of wall-clock CPU benchmarks would
# set `--quiet-wait`; the demo starts each benchmark at once.
QUIET_WAIT_S = 0.0
# tqdm's "12/20 [" in the benchmark's output: how far the denoise loop is.
_STEP = re.compile(r"(\d+)/(\d+) \[")
_ENDED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class DemoRunner:
    """Runs every queued job until the queue is empty, showing jobs done and the current denoise step."""

    def __init__(
        self, url: str, token: str, workdir: Path, sessions: sessionmaker[Session], console: Console
    ) -> None:
        self._sessions = sessions
        self._console = console
        self._client = TrackerClient(url, token, retries=5, backoff_s=0.5)
        self._progress: Progress | None = None
        self._overall: TaskID | None = None
        self._current: TaskID | None = None
        self._start = 0
        self._agent = Agent(
            AgentConfig(
                name=RUNNER_NAME,
                hardware=HARDWARE,
                gpus=1,
                workdir=workdir,
                poll_interval_s=0.5,
                quiet_wait_s=QUIET_WAIT_S,
                # Each toy run would spend ~3 s of its ~5 s importing torch: fork it preloaded.
                preload_modules=DEMO_PRELOAD,
            ),
            self._client,
            CandidateBuilder(workdir),
            default_workloads(cache_dir=workdir / "cache"),
            JobEvents(on_job=self._on_job, on_output=self._on_output, on_done=self._on_done),
        )

    def drain(self, phase: str) -> None:
        """Run jobs until none is queued (jobs queued meanwhile, confirmations and bisections, too)."""
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
        )
        start, total = self._counts()
        self._start = start
        self._progress = progress
        self._overall = progress.add_task(phase, total=total - start)
        self._current = progress.add_task("", total=None, visible=False)
        with progress:
            self._agent.run(once=True)
            finished, total = self._counts()
            progress.update(self._overall, completed=finished - start, total=total - start)
            progress.update(self._current, visible=False)
        self._progress = None

    def close(self) -> None:
        """End the preloaded interpreter and release the HTTP client."""
        self._agent.close()
        self._client.close()

    def _counts(self) -> tuple[int, int]:
        with self._sessions() as session:
            states = session.scalars(select(Job.state)).all()
        return sum(state in _ENDED for state in states), len(states)

    def _on_job(self, job: JobSpec) -> None:
        if self._progress is None or self._current is None:
            return
        patches = "".join(f" + #{patch.split('/')[2]}" for patch in job.candidate.patches)
        label = f"{job.reason} {job.case.slug} @ {job.candidate.base_sha[:7]}{patches}"
        self._progress.update(self._current, description=label, completed=0, total=None, visible=True)

    def _on_output(self, line: str) -> None:
        found = _STEP.search(line)
        if found and self._progress is not None and self._current is not None:
            self._progress.update(self._current, completed=int(found.group(1)), total=int(found.group(2)))

    def _on_done(self, job: JobSpec, payload: dict[str, object]) -> None:
        if self._progress is None or self._overall is None:
            return
        finished, total = self._counts()
        # The result is uploaded right after this event: count its job as finished already.
        done = min(finished - self._start + 1, total - self._start)
        self._progress.update(self._overall, completed=done, total=total - self._start)
