"""The demo's CPU runner: a real agent in this process, drained phase by phase with rich progress."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import TaskID
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from perftrack.demo.timing import Phase
from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.jobenv import job_environ
from runners.jobspec import JobSpec
from runners.progress import JobProgress
from runners.workloads.preload import DEMO_PRELOAD
from runners.workloads.registry import default_workloads
from tracker.enums import FINISHED_JOB_STATES
from tracker.models import Job, utcnow

HARDWARE = "cpu"
RUNNER_NAME = "demo-cpu-runner"
# How long each benchmark may wait for a quiet machine before it starts. The tracker runs in this
# process, and its follow-ups to the previous upload (a bisection started, an output check, an
# evidence trace read) slow a toy run that starts beside them enough to be flagged for contention
# and run again (docs/toy-noise.md, "neighbours"); a tenth of a second's look when it is quiet
# already. Longer than a burst of a neighbour that loads a core 15 s at a time (issue 27), so that
# a run, and above all a flagged run's re-run, starts after the burst rather than inside it.
QUIET_WAIT_S = 20.0


class DemoRunner:
    """Runs every queued job until the queue is empty, showing jobs done and the current job's line."""

    def __init__(
        self,
        url: str,
        token: str,
        workdir: Path,
        sessions: sessionmaker[Session],
        console: Console,
        *,
        git_env: Mapping[str, str] | None = None,
    ) -> None:
        """``git_env``: added to the environment of the builder's git calls (the demo's redirect of
        the repository's GitHub address to the local toy repository)."""
        self._sessions = sessions
        self._client = TrackerClient(url, token, retries=5, backoff_s=0.5)
        self._display = JobProgress(console, one_line=True)
        self._overall: TaskID | None = None
        self._start = 0
        self.phases: list[Phase] = []  # each drain's stretch of time, for the time table
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
            CandidateBuilder(workdir, base_env={**job_environ(), **(git_env or {})}),
            default_workloads(cache_dir=workdir / "cache"),
            self._display.events(on_done=self._on_done),
        )

    def drain(self, phase: str) -> None:
        """Run jobs until none is queued (jobs queued meanwhile, confirmations and bisections, too).

        The stretch is kept as a :class:`Phase` named by ``phase`` up to its first colon.
        """
        progress = self._display.progress
        start, total = self._counts()
        self._start = start
        self._overall = progress.add_task(phase, total=total - start)
        began = utcnow()
        with progress:
            self._agent.run(once=True)
            finished, total = self._counts()
            progress.update(self._overall, completed=finished - start, total=total - start)
            self._display.hide()
        self.phases.append(Phase(phase.split(":")[0], began, utcnow()))
        self._display.clear()  # the next phase starts on a display of its own
        self._overall = None

    def close(self) -> None:
        """End the preloaded interpreter and release the HTTP client."""
        self._agent.close()
        self._client.close()

    def _counts(self) -> tuple[int, int]:
        with self._sessions() as session:
            states = session.scalars(select(Job.state)).all()
        return sum(state in FINISHED_JOB_STATES for state in states), len(states)

    def _on_done(self, job: JobSpec, payload: dict[str, Any]) -> None:
        if self._overall is None:
            return
        finished, total = self._counts()
        # The result is uploaded right after this event: count its job as finished already.
        done = min(finished - self._start + 1, total - self._start)
        self._display.progress.update(self._overall, completed=done, total=total - self._start)
