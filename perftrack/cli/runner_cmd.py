"""``perftrack runner``: the agent a GPU host (or a laptop, for the toy) runs to take jobs."""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from types import FrameType

import typer
from rich.console import Console

from perftrack.cli.common import fail, require_runner_extra, settings
from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient, TrackerError
from runners.jobenv import JobEnvironment
from runners.progress import JobProgress
from runners.workloads.registry import default_workloads
from tracker.observability.log_config import configure_from_settings
from tracker.settings import Settings

# The options whose help runs to several lines, kept out of runner()'s signature.
QUIET_WAIT_OPT = typer.Option(
    0.0,
    "--quiet-wait",
    min=0.0,
    help="CPU runners (--hardware cpu): wait up to this many seconds for other processes to leave "
    "the CPUs before each benchmark starts (0, the default: start at once).",
)
ENV_ALLOW_OPT = typer.Option(
    [],
    "--env-allow",
    help="Environment variable (or NAME_* prefix) that builds and benchmarks may see besides the default "
    "allow-list (PATH, HOME, locale, CUDA_*, TORCH_*, HF_HOME, proxies, ...); repeatable. A secret-looking "
    "name (HF_TOKEN) passes only when named exactly; PERFTRACK_* and the runner token never pass.",
)
CLAIM_WAIT_OPT = typer.Option(
    20.0,
    "--claim-wait",
    min=0.0,
    max=30.0,
    help="Seconds an idle claim waits on the tracker for a job to be queued (long-poll; answered as soon "
    "as one is); 0: ask, then sleep --poll-interval.",
)
PRELOAD_OPT = typer.Option(
    [],
    "--preload",
    help="Module a preloaded interpreter imports once (e.g. torch); `python -m` benchmarks are then "
    "forked from it instead of importing it again. Repeatable; none (the default): off.",
)


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
    claim_wait: float = CLAIM_WAIT_OPT,
    label: list[str] = typer.Option(
        [], "--label", help="KEY=VALUE label advertised to the tracker; repeatable."
    ),
    build_command: list[str] = typer.Option(
        [], "--build-command", help="REPO=COMMAND run in each new tree, e.g. 'sglang=pip install -e python'."
    ),
    sglang: str = typer.Option("sglang", "--sglang", help="The sglang executable to run."),
    quiet_wait: float = QUIET_WAIT_OPT,
    env_allow: list[str] = ENV_ALLOW_OPT,
    preload: list[str] = PRELOAD_OPT,
) -> None:
    """Lease jobs from the tracker, build each candidate, run the benchmark, upload the result."""
    require_runner_extra("perftrack runner")
    config = settings()
    secret = _runner_token(token, config)
    labels = _pairs(label, "--label")
    builds = _pairs(build_command, "--build-command")
    job_env = _job_environment(env_allow, secret)
    configure_from_settings(config, extra_secrets=[secret])
    console = Console()
    display = JobProgress(console)
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
            claim_wait_s=claim_wait,
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
    raise typer.Exit(_run(agent, client, display, name=name, once=once))


def _runner_token(token: str | None, config: Settings) -> str:
    """``--token``, else PERFTRACK_TOKEN; without either the command fails, saying how to make one."""
    secret = token or (config.token.get_secret_value() if config.token else None)
    if not secret:
        fail(
            "a runner token is needed: --token or PERFTRACK_TOKEN (perftrack token create NAME --role runner)"
        )
    return secret


def _job_environment(env_allow: list[str], secret: str) -> dict[str, str]:
    """What the agent launches for a job sees: this allow-listed environment, never its token."""
    try:
        return JobEnvironment(allow=tuple(env_allow), secrets=(secret,)).environ()
    except ValueError as error:
        fail(f"--env-allow: {error}")


def _run(agent: Agent, client: TrackerClient, display: JobProgress, *, name: str, once: bool) -> int:
    """The agent's exit code once it stops; the agent and the client are closed whatever happens."""
    try:
        with display.progress:
            return agent.run(once=once)
    except TrackerError as error:
        # Refused for good (e.g. the name is bound to another runner's token): say why, no traceback.
        fail(f"the tracker refused runner {name!r}: {error}")
    finally:
        agent.close()
        client.close()


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
