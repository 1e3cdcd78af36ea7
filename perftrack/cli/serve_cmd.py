"""``perftrack serve``: the web dashboard and API."""

from __future__ import annotations

import gc

import typer
import uvicorn
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from perftrack.cli.common import console, settings
from tracker.observability.log_config import configure_from_settings


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
    configure_from_settings(config)
    # log_config=None: uvicorn keeps out of logging; each worker configures it in served_app().
    uvicorn.run(
        "perftrack.cli.serve_cmd:served_app",
        host=host,
        port=port,
        workers=workers,
        factory=True,
        log_config=None,
        access_log=False,  # perftrack.access logs each request, with its request id
    )


def served_app() -> FastAPI:
    """The app as ``serve`` runs it, in every worker process: logging set up from the settings first."""
    from web.app import create_app  # lazy: only workers need the web app; `perftrack --help` stays fast

    configure_from_settings(settings())
    app = create_app()
    # Everything imported and built so far lives as long as the process. Frozen, it is left out of
    # the collector's full passes: on the 2-core benchmark host a full pass over a started server's
    # ~270,000 objects took 180-260 ms, and the overview's allocations set one off every few
    # requests (its p95 was 2.5x its p50); frozen, a full pass took 4-33 ms. Garbage first, so
    # none of it is kept.
    gc.collect()
    gc.freeze()
    return app


def _redacted(url: str) -> str:
    """The database URL without its password."""
    return make_url(url).render_as_string(hide_password=True)
