"""``perftrack demo``: the whole loop on a CPU (toy repository, tracker, runner, dashboard)."""

from __future__ import annotations

from pathlib import Path

import typer

from perftrack.cli.common import console, fail, require_runner_extra, settings


def demo(
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Where the demo lives (default: the data dir)."
    ),
    host: str = typer.Option("127.0.0.1", help="Interface the dashboard listens on."),
    port: int = typer.Option(8000, help="Dashboard port."),
    exit_after: bool = typer.Option(
        False,
        "--exit",
        help="Stop after the summary instead of serving; exit 1 when the scorecard falls short.",
    ),
) -> None:
    """Build the toy repository, run its history and /perf comparisons (asked on a fake GitHub) on a CPU
    runner, print what changed and how people were told."""
    require_runner_extra("perftrack demo")
    # Lazy: the demo pulls in the web app, uvicorn and the toy; `perftrack --help` should not load them.
    from perftrack.demo.run import run_demo

    try:
        code = run_demo(
            data_dir=data_dir or settings().data_dir,
            host=host,
            port=port,
            exit_after=exit_after,
            console=console,
        )
    except RuntimeError as error:
        fail(str(error))
    raise typer.Exit(code)
