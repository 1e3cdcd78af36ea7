"""``perftrack runner``: the agent a GPU host (or a laptop, for the toy) runs to take jobs."""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path
from types import FrameType

import typer
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

from runners.agent import Agent, AgentConfig, JobEvents
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient, TrackerError
from runners.jobenv import JobEnvironment
from runners.jobspec import JobSpec
from runners.workloads.registry import default_workloads
from tracker.logs import configure_from_settings
from web.cli.common import fail, settings

# tqdm's "12/50 [" as sglang (and the toy) print it, to follow the denoise loop.
_TQDM = re.compile(r"(\d+)/(\d+) \[")


class RunnerProgress:
    """A rich progress line per job: phase, then the denoise steps as the benchmark prints them."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None
        self._label = ""

    def events(self) -> JobEvents:
        """Callbacks for the agent."""
        return JobEvents(on_job=self.job, on_phase=self.phase, on_output=self.output, on_done=self.done)

    def job(self, job: JobSpec) -> None:
        label = f"job {job.job_id} #{job.attempt} {job.case.slug} @ {job.candidate.base_sha[:7]}"
        if job.candidate.patches:
            label += " + " + ", ".join(
                patch.rsplit("/", 2)[-2] if "pull" in patch else patch[:7] for patch in job.candidate.patches
            )
        self._label = label
        self._task = self.progress.add_task(label, total=None)

    def phase(self, job: JobSpec, phase: str) -> None:
        if self._task is not None:
            self.progress.update(self._task, description=f"{self._label} · {phase}")

    def output(self, line: str) -> None:
        match = _TQDM.search(line)
        if match and self._task is not None:
            self.progress.update(self._task, completed=int(match.group(1)), total=int(match.group(2)))

    def done(self, job: JobSpec, payload: dict[str, object]) -> None:
        if self._task is None:
            return
        status = payload.get("status")
        value = payload.get("denoise_step_mean_ms")
        steps = payload.get("step_times_ms")
        if isinstance(steps, list) and steps:
            ordered = sorted(float(step) for step in steps)
            value = ordered[len(ordered) // 2]
        outcome = (
            f"{value:.2f} ms/step"
            if status == "ok" and isinstance(value, float)
            else f"failed: {payload.get('failure_reason')}"
        )
        self.progress.update(self._task, description=f"{self._label} · {outcome}")
        self.progress.stop_task(self._task)
        self._task = None


def runner(
    server: str = typer.Option(..., "--server", help="Tracker URL, e.g. http://tracker:8000."),
    token: str | None = typer.Option(None, "--token", help="Runner token (or PERFTRACK_TOKEN)."),
    hardware: str = typer.Option(..., "--hardware", help="Hardware kind this host offers, e.g. H200 or cpu."),
    gpus: int = typer.Option(1, "--gpus", min=1, help="GPUs (slots) this host offers."),
    workdir: Path = typer.Option(..., "--workdir", help="Mirrors, worktrees, spool and job scratch space."),
    name: str = typer.Option(socket.gethostname(), "--name", help="Runner name, unique per agent."),
    once: bool = typer.Option(False, "--once", help="Run until the queue is empty, then exit."),
    poll_interval: float = typer.Option(
        10.0, "--poll-interval", min=0.1, help="Seconds between polls when idle."
    ),
    label: list[str] = typer.Option(
        [], "--label", help="KEY=VALUE label advertised to the tracker; repeatable."
    ),
    build_command: list[str] = typer.Option(
        [], "--build-command", help="REPO=COMMAND run in each new tree, e.g. 'sglang=pip install -e python'."
    ),
    sglang: str = typer.Option("sglang", "--sglang", help="The sglang executable to run."),
    quiet_wait: float = typer.Option(
        0.0,
        "--quiet-wait",
        min=0.0,
        help="CPU runners (--hardware cpu): wait up to this many seconds for other processes to leave "
        "the CPUs before each benchmark starts (0, the default: start at once).",
    ),
    env_allow: list[str] = typer.Option(
        [],
        "--env-allow",
        help="Environment variable (or NAME_* prefix) that builds and benchmarks may see besides the default "
        "allow-list (PATH, HOME, locale, CUDA_*, TORCH_*, HF_HOME, proxies, ...); repeatable. A secret-looking "
        "name (HF_TOKEN) passes only when named exactly; PERFTRACK_* and the runner token never pass.",
    ),
    preload: list[str] = typer.Option(
        [],
        "--preload",
        help="Module a preloaded interpreter imports once (e.g. torch); `python -m` benchmarks are then "
        "forked from it instead of importing it again. Repeatable; none (the default): off.",
    ),
) -> None:
    """Lease jobs from the tracker, build each candidate, run the benchmark, upload the result."""
    config = settings()
    secret = token or (config.token.get_secret_value() if config.token else None)
    if not secret:
        fail(
            "a runner token is needed: --token or PERFTRACK_TOKEN (perftrack token create NAME --role runner)"
        )
    labels = _pairs(label, "--label")
    builds = _pairs(build_command, "--build-command")
    try:
        # What the agent launches for a job sees this allow-listed environment, never its token.
        job_env = JobEnvironment(allow=tuple(env_allow), secrets=(secret,)).environ()
    except ValueError as error:
        fail(f"--env-allow: {error}")
    configure_from_settings(config, extra_secrets=[secret])
    console = Console()
    display = RunnerProgress(console)
    workdir.mkdir(parents=True, exist_ok=True)
    client = TrackerClient(server, secret, timeout_s=config.http_timeout_s)
    agent = Agent(
        AgentConfig(
            name=name,
            hardware=hardware,
            gpus=gpus,
            workdir=workdir,
            labels=labels,
            poll_interval_s=poll_interval,
            max_log_bytes=config.max_log_bytes,
            quiet_wait_s=quiet_wait,
            preload_modules=tuple(preload),
        ),
        client,
        CandidateBuilder(workdir, build_commands=builds, base_env=job_env),
        default_workloads(sglang=sglang, cache_dir=workdir / "cache", base_env=job_env),
        display.events(),
    )
    _install_stop_handlers(agent, console)
    console.print(f"runner [bold]{name}[/] ({hardware}, {gpus} GPU slots) polling {server}", highlight=False)
    try:
        with display.progress:
            code = agent.run(once=once)
    except TrackerError as error:
        # Refused for good (e.g. the name is bound to another runner's token): say why, no traceback.
        fail(f"the tracker refused runner {name!r}: {error}")
    finally:
        agent.close()
        client.close()
    raise typer.Exit(code)


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            fail(f"{option}: {value!r} is not KEY=VALUE")
        pairs[key] = rest
    return pairs


def _install_stop_handlers(agent: Agent, console: Console) -> None:
    """First SIGTERM/SIGINT: stop the benchmark and hand the job back; a second one: exit now."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        if agent.stopping:
            raise SystemExit(128 + signum)
        console.print(
            f"[yellow]{signal.Signals(signum).name}: stopping; the running job goes back to the queue[/]"
        )
        agent.request_stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
