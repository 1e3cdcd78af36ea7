"""Alembic: the initial migration goes up and down on the backend under test, and matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from tracker import db
from tracker.models import Base


def test_upgrade_downgrade_upgrade(scratch_db_url: str) -> None:
    engine = db.make_engine(scratch_db_url)
    try:
        assert db.current_revision(engine) is None
        db.upgrade(scratch_db_url)
        assert db.current_revision(engine) == db.head_revision()
        tables = set(inspect(engine).get_table_names())
        assert set(Base.metadata.tables) <= tables
        db.downgrade(scratch_db_url, "base")
        assert db.current_revision(engine) is None
        assert set(inspect(engine).get_table_names()) - {"alembic_version"} == set()
        db.upgrade(scratch_db_url)
        assert db.current_revision(engine) == db.head_revision()
    finally:
        engine.dispose()


def test_models_and_migrations_do_not_drift(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()
