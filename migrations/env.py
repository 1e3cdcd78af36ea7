"""Alembic environment: perftrack's models are the target; the URL comes from the config or settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, pool

from tracker.db import make_engine
from tracker.models import Base
from tracker.settings import get_settings

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    return url or get_settings().effective_database_url


def run_migrations_offline() -> None:
    """Emit SQL to stdout instead of touching a database."""
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run migrations in one transaction on a live connection."""
    connectable = config.attributes.get("connection")
    if connectable is not None:
        _run(connectable)
        return
    engine = make_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # Batch mode rebuilds a table (copy, DROP, rename); with foreign keys on, the DROP would
        # delete or null every row that references the table. The pragma is a no-op inside a
        # transaction, so it goes to the driver before the migration's transaction begins; the
        # references are checked before that transaction commits.
        _foreign_keys(connection, on=False)
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite needs batch mode to alter tables
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
            if broken:
                raise RuntimeError(f"the migration left rows whose references are broken: {broken[:10]}")
    if sqlite:
        _foreign_keys(connection, on=True)


def _foreign_keys(connection: Connection, *, on: bool) -> None:
    """Switch SQLite's foreign keys on the driver's connection, outside any transaction."""
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
