"""The ``perftrack`` command line (typer): one app, one module per command family."""

from __future__ import annotations

import typer

from perftrack.cli import (
    alerts_cmd,
    compare_cmd,
    db_cmd,
    demo_cmd,
    github_cmd,
    logs_cmd,
    notifications_cmd,
    runner_cmd,
    scheduler_cmd,
    serve_cmd,
    suites_cmd,
    token_cmd,
)

app = typer.Typer(
    name="perftrack",
    help=(
        "Performance tracking for diffusion-model pull requests.\n\n"
        "Imports `sglang generate` logs and perf dumps, stores every denoise step time, and shows each "
        "case × hardware series in a web dashboard. Configuration comes from PERFTRACK_* environment "
        "variables (PERFTRACK_DATABASE_URL, PERFTRACK_ADMIN_TOKEN, ...)."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
app.add_typer(db_cmd.app, name="db")
app.add_typer(token_cmd.app, name="token")
app.add_typer(suites_cmd.app, name="suites")
app.add_typer(alerts_cmd.app, name="alerts")
app.add_typer(github_cmd.app, name="github")
app.add_typer(notifications_cmd.app, name="notifications")
app.command("demo")(demo_cmd.demo)
app.command("serve")(serve_cmd.serve)
app.command("parse-log")(logs_cmd.parse_log)
app.command("import-log")(logs_cmd.import_log)
app.command("runner")(runner_cmd.runner)
app.command("compare")(compare_cmd.compare)
app.command("scheduler")(scheduler_cmd.scheduler)


def main() -> None:
    """Console-script entry point."""
    app()
