"""Engine and session factory, plus the schema upgrade entry points (Alembic only)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from wire import replace_unencodable

WRITE_OPTION = "perftrack_write"
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine configured for perftrack's use of the backend.

    SQLite gets foreign keys, WAL (readers do not block the writer), a busy timeout, and
    ``BEGIN IMMEDIATE`` for sessions made by :func:`make_session_factory` with ``write=True``, and
    JSON columns read by :func:`read_json`.
    """
    if url.startswith("sqlite"):
        if url not in ("sqlite://", "sqlite:///:memory:"):
            Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("json_deserializer", read_json)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs)
        _configure_sqlite(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


# A surrogate escape in stored JSON text (json.dumps writes every non-ASCII character as one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def read_json(text: str) -> Any:
    """A SQLite JSON column's value, each lone UTF-16 surrogate replaced by U+FFFD.

    Uploads holding one are refused (:mod:`wire.text`), but a database written before that may
    hold some, which no page or JSON answer could write out. PostgreSQL's JSONB never stored one.
    """
    value = json.loads(text)
    return replace_unencodable(value) if _SURROGATE_ESCAPE.search(text) else value


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy control transactions instead of the sqlite3 module's implicit ones.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Writers take the write lock up front, so a read-then-write transaction never fails
        # half-way with SQLITE_BUSY; readers begin deferred and never wait for a writer (WAL).
        immediate = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_session_factory(engine: Engine, *, write: bool = True) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit (handlers render after committing).

    ``write=False`` makes read-only sessions, which on SQLite never wait for the write lock.
    """
    bind = engine.execution_options(**{WRITE_OPTION: True}) if write else engine
    return sessionmaker(bind=bind, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    """Alembic configuration pointing at perftrack's migrations and the given database."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database up to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Migrate the database down to ``revision`` (``base`` drops every table)."""
    command.downgrade(alembic_config(url), revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or ``None`` for an empty database."""
    with engine.connect() as connection:
        return current_revision_of(connection)


def current_revision_of(connection: Connection) -> str | None:
    """The revision seen through an open connection."""
    return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    """The newest revision shipped with this version of perftrack."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def upsert_insert(session: Session, table: Any) -> Any:
    """``INSERT`` for ``table`` in the dialect of ``session``'s database, with ``ON CONFLICT`` clauses
    (PostgreSQL and SQLite spell them alike)."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    return dialect.insert(table)
