"""0026: a comparison's check run id and the outbox's ``check`` rows, on both databases: the kind is
refused before the revision and taken after it; a downgrade refuses while a check row is stored."""

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


def _check_row(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            sa.insert(OUTBOX).values(
                kind="check", repository="sgl-project/sglang", target="2" * 40, payload={}, attempts=0
            )
        )


def test_0026_takes_check_rows_and_a_downgrade_refuses_while_one_is_stored(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url, "0025")
    engine = db.make_engine(scratch_db_url)
    try:
        with pytest.raises(IntegrityError):  # the kind is not known before the revision
            _check_row(engine)
        db.upgrade(scratch_db_url, "0026")
        columns = {column["name"] for column in inspect(engine).get_columns("comparisons")}
        assert "github_check_run_id" in columns
        _check_row(engine)
        with pytest.raises(RuntimeError, match="1 check row"):
            db.downgrade(scratch_db_url, "0025")
        with engine.begin() as connection:
            connection.execute(sa.delete(OUTBOX))
        db.downgrade(scratch_db_url, "0025")
        columns = {column["name"] for column in inspect(engine).get_columns("comparisons")}
        assert "github_check_run_id" not in columns
    finally:
        engine.dispose()
