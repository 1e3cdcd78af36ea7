"""``perftrack db``: schema migrations (Alembic)."""

from __future__ import annotations

import typer

from perftrack.cli.common import console, fail, settings
from tracker import db

app = typer.Typer(help="Migrate the database schema (the only way it changes).", no_args_is_help=True)


@app.command()
def upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Upgrade the schema to REVISION (default: the newest)."""
    url = settings().effective_database_url
    db.upgrade(url, revision)
    console.print(f"database at [bold]{_current(url)}[/]")


# ignore_unknown_options: "-1" (one step back) is a revision, not an option.
@app.command(context_settings={"ignore_unknown_options": True})
def downgrade(revision: str = typer.Argument(..., help="Target revision, e.g. -1 or base.")) -> None:
    """Downgrade the schema to REVISION (``base`` drops every perftrack table)."""
    url = settings().effective_database_url
    db.downgrade(url, revision)
    console.print(f"database at [bold]{_current(url) or 'base (empty)'}[/]")


@app.command()
def current() -> None:
    """Show the schema revision of the database and the newest one this perftrack ships."""
    url = settings().effective_database_url
    revision = _current(url)
    head = db.head_revision()
    console.print(f"database: {revision or 'empty'}\nnewest:   {head}")
    if revision != head:
        fail("the database is not at the newest revision; run `perftrack db upgrade`", code=2)


def _current(url: str) -> str | None:
    engine = db.make_engine(url)
    try:
        return db.current_revision(engine)
    finally:
        engine.dispose()
