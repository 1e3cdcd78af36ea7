"""The databases tests run against: SQLite files, or databases on the PostgreSQL server named by
``PERFTRACK_TEST_DATABASE_URL``; one set per pytest-xdist worker, so workers never share one.

Migrating an empty database through every revision takes seconds, so it happens once per worker:
:func:`migrated_database` hands out copies of a migrated template (a file copy on SQLite,
``CREATE DATABASE ... TEMPLATE`` on PostgreSQL). Tests of the migrations themselves take
:func:`empty_database`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import URL, make_url

from tracker import db
from tracker.settings import Settings

PG_URL_ENV = "PERFTRACK_TEST_DATABASE_URL"


def postgres_url() -> str | None:
    """The PostgreSQL server under test, or ``None`` when the tests run on SQLite."""
    return os.environ.get(PG_URL_ENV) or None


def worker() -> str:
    """This process's pytest-xdist worker (``gw0``, ``gw1``, ...), or ``main`` without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _admin_url() -> URL:
    configured = postgres_url()
    assert configured is not None
    return make_url(Settings(database_url=configured).effective_database_url)


def _admin() -> Engine:
    return create_engine(_admin_url(), isolation_level="AUTOCOMMIT")


def _recreate(name: str, *, template: str | None = None) -> str:
    """A new PostgreSQL database ``name`` (dropped first if a crashed run left it)."""
    admin = _admin()
    try:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            suffix = f' TEMPLATE "{template}"' if template else ""
            connection.execute(text(f'CREATE DATABASE "{name}"{suffix}'))
    finally:
        admin.dispose()
    return _admin_url().set(database=name).render_as_string(hide_password=False)


def _drop(name: str) -> None:
    admin = _admin()
    try:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _scratch_name(prefix: str) -> str:
    return f"{prefix}_{worker()}_{uuid.uuid4().hex[:10]}"


@functools.cache
def _sqlite_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"perftrack-tests-{worker()}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@functools.cache
def _template() -> str:
    """A database migrated to head, once per worker: SQLite's file path, or PostgreSQL's name."""
    if postgres_url() is None:
        path = _sqlite_dir() / "template.db"
        db.upgrade(f"sqlite:///{path}")
        return str(path)
    name = f"perftrack_template_{worker()}"
    url = _recreate(name)
    db.upgrade(url)
    atexit.register(_drop, name)
    return name


@contextlib.contextmanager
def migrated_database(root: Path) -> Iterator[str]:
    """A database of the backend under test, migrated to head and holding nothing else."""
    template = _template()
    if postgres_url() is None:
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"migrated-{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(template, path)
        yield f"sqlite:///{path}"
        return
    name = _scratch_name("perftrack_migrated")
    try:
        yield _recreate(name, template=template)
    finally:
        _drop(name)


def session_database() -> str:
    """The worker's shared database, migrated to head (the ``engine`` fixture syncs the suites)."""
    template = _template()
    if postgres_url() is None:
        path = _sqlite_dir() / "perftrack-test.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"
    name = f"perftrack_session_{worker()}"
    atexit.register(_drop, name)
    return _recreate(name, template=template)


@contextlib.contextmanager
def empty_database(root: Path) -> Iterator[str]:
    """An empty database of the backend under test (for tests of the migrations themselves)."""
    if postgres_url() is None:
        root.mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{root / f'empty-{uuid.uuid4().hex[:8]}.db'}"
        return
    name = _scratch_name("perftrack_empty")
    try:
        yield _recreate(name)
    finally:
        _drop(name)
