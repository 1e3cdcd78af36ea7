"""check runs: a PR comparison's GitHub check run on its head (App mode)

- ``comparisons.github_check_run_id``: the check run the bot created for the comparison, edited as
  it moves (queued, in progress with the rounds done, completed with a conclusion). NULL: none yet,
  or token mode, where GitHub has no Checks.
- ``github_outbox.kind`` may be ``check``: a create or edit of that check run, sent like the rest.

The downgrade refuses while an outbox row of kind ``check`` is stored (the older code cannot send
it); delete those rows first.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04 23:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_KINDS = ("comment", "reply", "reaction", "status")
KINDS = (*OLD_KINDS, "check")
KIND_COMMENT = "comment, reply, reaction, status, check"
OLD_KIND_COMMENT = "comment, reply, reaction, status"
CHECK_RUN_COMMENT = "the check run on the head (App mode), created once and edited"

github_outbox = sa.table("github_outbox", sa.column("kind", sa.String(16)))


def _kinds(values: Sequence[str], comment: str, old_comment: str) -> None:
    listed = ", ".join(f"'{value}'" for value in values)
    with op.batch_alter_table("github_outbox", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_github_outbox_outbox_kind"), type_="check")
        batch_op.create_check_constraint(batch_op.f("ck_github_outbox_outbox_kind"), f"kind IN ({listed})")
        batch_op.alter_column(
            "kind",
            existing_type=sa.String(length=16),
            existing_nullable=False,
            comment=comment,
            existing_comment=old_comment,
        )


def upgrade() -> None:
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("github_check_run_id", sa.BigInteger(), nullable=True, comment=CHECK_RUN_COMMENT)
        )
    _kinds(KINDS, KIND_COMMENT, OLD_KIND_COMMENT)


def downgrade() -> None:
    connection = op.get_bind()
    found = connection.execute(
        sa.select(sa.func.count()).select_from(github_outbox).where(github_outbox.c.kind == "check")
    ).scalar_one()
    if found:
        raise RuntimeError(f"github_outbox holds {found} check row(s): delete them before downgrading")
    _kinds(OLD_KINDS, OLD_KIND_COMMENT, KIND_COMMENT)
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.drop_column("github_check_run_id")
