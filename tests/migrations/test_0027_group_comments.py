"""0027: a group's comment id and the outbox's ``culprit`` rows, on both databases: the kind is
refused before the revision and taken after it; a downgrade refuses while a culprit row is stored."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from tracker import db

pytestmark = pytest.mark.dialect

OUTBOX = sa.table(
    "github_outbox",
    sa.column("kind", sa.String(16)),
    sa.column("repository", sa.String(255)),
    sa.column("target", sa.String(64)),
    sa.column("payload", sa.JSON()),
    sa.column("attempts", sa.Integer()),
)


def _culprit_row(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            sa.insert(OUTBOX).values(
                kind="culprit",
                repository="sgl-project/sglang",
                target="4321",
                payload={"group_id": 1},
                attempts=0,
            )
        )


def _group_columns(engine: sa.Engine) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns("alert_groups")}


def test_0027_takes_culprit_rows_and_a_downgrade_refuses_while_one_is_stored(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url, "0026")
    engine = db.make_engine(scratch_db_url)
    try:
        with pytest.raises(IntegrityError):  # the kind is not known before the revision
            _culprit_row(engine)
        db.upgrade(scratch_db_url, "0027")
        assert "github_comment_id" in _group_columns(engine)
        _culprit_row(engine)
        with pytest.raises(RuntimeError, match="1 culprit row"):
            db.downgrade(scratch_db_url, "0026")
        with engine.begin() as connection:
            connection.execute(sa.delete(OUTBOX))
        db.downgrade(scratch_db_url, "0026")
        assert "github_comment_id" not in _group_columns(engine)
    finally:
        engine.dispose()
