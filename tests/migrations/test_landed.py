"""A landed migration is never edited: a change to the schema is a new revision."""

from __future__ import annotations

from pathlib import Path

from tests.migrations.landed import fingerprint, landed, revisions


def test_no_landed_revision_was_edited() -> None:
    now = revisions()
    edited = sorted(name for name, digest in landed().items() if now.get(name) != digest)
    assert edited == [], f"landed revisions changed or vanished (write a new revision instead): {edited}"


def test_every_revision_is_in_the_manifest() -> None:
    unlisted = sorted(set(revisions()) - set(landed()))
    assert unlisted == [], f"append `python -m tests.migrations.landed` lines for {unlisted} to landed.txt"


def test_the_fingerprint_sees_code_and_ignores_comments_and_layout(tmp_path: Path) -> None:
    revision = tmp_path / "rev.py"
    revision.write_text("def upgrade():\n    op.add_column('runs', sa.Column('x', sa.Integer()))\n")
    landed_print = fingerprint(revision)
    revision.write_text(
        "# a comment\ndef upgrade():\n\n    op.add_column( 'runs', sa.Column('x', sa.Integer()) )\n"
    )
    assert fingerprint(revision) == landed_print
    revision.write_text("def upgrade():\n    op.add_column('runs', sa.Column('y', sa.Integer()))\n")
    assert fingerprint(revision) != landed_print
