"""``perftrack serve``: the web dashboard and API."""

from __future__ import annotations

import typer
import uvicorn

from web.cli.common import console, settings


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, help="TCP port."),
    workers: int = typer.Option(1, help="Worker processes (PostgreSQL only; SQLite uses one)."),
) -> None:
    """Serve the dashboard and the /api/v1 JSON API (SQLite databases are migrated on start)."""
    config = settings()
    if config.is_sqlite and workers > 1:
        console.print("[yellow]SQLite: using one worker process[/]")
        workers = 1
    console.print(
        f"perftrack on [bold]http://{host}:{port}/[/] (database: {_redacted(config.effective_database_url)})"
    )
    uvicorn.run("web.app:create_app", host=host, port=port, workers=workers, log_level="info", factory=True)


def _redacted(url: str) -> str:
    """The database URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
