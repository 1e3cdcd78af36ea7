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


def test_0002_counts_the_patches_of_existing_candidates(scratch_db_url: str) -> None:
    from sqlalchemy import text

    db.upgrade(scratch_db_url, "0001")
    engine = db.make_engine(scratch_db_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO repositories (id, name, url, default_branch) VALUES (1, 'r', 'u', 'main')")
            )
            connection.execute(
                text(
                    "INSERT INTO commits (id, repository_id, sha, parents, title, author_name, author_email, "
                    "committed_at, committed_at_estimated) VALUES (1, 1, 'abcdef0', '[]', '', '', '', "
                    "'2026-01-01 00:00:00', false)"
                )
            )
            for candidate, patches in ((1, 0), (2, 2)):
                connection.execute(
                    text(
                        "INSERT INTO candidates (id, key, repository_id, base_commit_id, label) VALUES (:i, :k, 1, 1, '')"
                    ),
                    {"i": candidate, "k": f"key-{candidate}"},
                )
                for position in range(patches):
                    connection.execute(
                        text(
                            "INSERT INTO candidate_patches (candidate_id, position, kind, ref, title) "
                            "VALUES (:c, :p, 'commit', :r, '')"
                        ),
                        {"c": candidate, "p": position, "r": f"{position:07x}"},
                    )
        db.upgrade(scratch_db_url)
        with engine.connect() as connection:
            counts = dict(
                connection.execute(text("SELECT id, patch_count FROM candidates ORDER BY id")).all()
            )
        assert counts == {1: 0, 2: 2}
    finally:
        engine.dispose()
