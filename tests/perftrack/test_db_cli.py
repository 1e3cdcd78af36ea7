"""``perftrack db``: one step back with ``-1`` (a revision, not an option), then forward again."""

from __future__ import annotations

from tests.perftrack.test_cli import cli_env, invoke
from tracker import db

__all__ = ["cli_env"]


def test_downgrade_one_step_and_back(cli_env: str) -> None:
    head = db.head_revision()
    assert invoke("db", "upgrade")[0] == 0
    code, output = invoke("db", "downgrade", "-1")
    assert code == 0, output
    engine = db.make_engine(cli_env)
    try:
        assert db.current_revision(engine) == f"{int(head) - 1:04d}"  # revisions are 0001, 0002, ...
    finally:
        engine.dispose()
    code, output = invoke("db", "upgrade")
    assert code == 0
    assert head in output
