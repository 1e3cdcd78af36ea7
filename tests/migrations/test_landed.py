"""A landed migration is never edited: a change to the schema is a new revision."""

from __future__ import annotations

from tests.migrations.landed import landed, revisions


def test_no_landed_revision_was_edited() -> None:
    now = revisions()
    edited = sorted(name for name, digest in landed().items() if now.get(name) != digest)
    assert edited == [], f"landed revisions changed or vanished (write a new revision instead): {edited}"


def test_every_revision_is_in_the_manifest() -> None:
    unlisted = sorted(set(revisions()) - set(landed()))
    assert unlisted == [], f"append `python -m tests.migrations.landed` lines for {unlisted} to landed.txt"
