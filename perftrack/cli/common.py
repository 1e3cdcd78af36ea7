"""Shared CLI plumbing: settings, database access, error reporting."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.orm import Session

from runners.extra import runner_extra_problem
from tracker import db
from tracker.bootstrap import prepare_database
from tracker.errors import PerftrackError
from tracker.settings import Settings, get_settings
from tracker.vcs.history import GitHistory
from tracker.workflows.bisections import start_queued

console = Console(soft_wrap=True)  # long paths and messages stay on one line (greppable)
err_console = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print an error in red on stderr and exit; ``message`` is plain text (``[runner]`` stays as written)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def settings() -> Settings:
    """The validated settings, or a clean exit naming what is wrong."""
    try:
        return get_settings()
    except ValueError as error:
        fail(f"invalid configuration: {error}")


def require_runner_extra(command: str) -> None:
    """Stop ``command`` with the install it needs when this one lacks the runner extra."""
    problem = runner_extra_problem(command)
    if problem:
        fail(problem)


@contextmanager
def database_session(prepare: bool = True) -> Iterator[Session]:
    """A session on the configured database, committed on success.

    With ``prepare``, an SQLite database is migrated and the suites are synced first (as ``serve``
    does); PostgreSQL must already be at the current schema (``perftrack db upgrade``).
    """
    config = settings()
    engine = db.make_engine(config.effective_database_url)
    try:
        if prepare:
            prepare_database(config, engine)
        with db.session_scope(db.make_session_factory(engine)) as session:
            yield session
    except PerftrackError as error:
        fail(str(error))
    finally:
        engine.dispose()


def start_queued_bisections() -> int:
    """List the queued bisections' ranges from git (no transaction open meanwhile) and start them."""
    config = settings()
    engine = db.make_engine(config.effective_database_url)
    try:
        return start_queued(
            sessions=db.make_session_factory(engine),
            history=GitHistory(config.git_cache_dir),
        )
    except PerftrackError as error:
        fail(str(error))
    finally:
        engine.dispose()
