"""group comments: a group's one comment on its culprit's merged pull request

- ``alert_groups.github_comment_id``: the comment the bot posted on the pull request the group's
  culprit commit came from, edited as the group grows. NULL: none yet (or never told).
- ``github_outbox.kind`` may be ``culprit``: a create or edit of that comment, sent like the rest.

The downgrade refuses while an outbox row of kind ``culprit`` is stored (the older code cannot send
it); delete those rows first.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04 23:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_KINDS = ("comment", "reply", "reaction", "status", "check")
KINDS = (*OLD_KINDS, "culprit")
KIND_COMMENT = "comment, reply, reaction, status, check, culprit"
OLD_KIND_COMMENT = "comment, reply, reaction, status, check"
GROUP_COMMENT = "the bot's comment on the culprit's pull request, edited as the group grows"

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
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("github_comment_id", sa.BigInteger(), nullable=True, comment=GROUP_COMMENT)
        )
    _kinds(KINDS, KIND_COMMENT, OLD_KIND_COMMENT)


def downgrade() -> None:
    connection = op.get_bind()
    found = connection.execute(
        sa.select(sa.func.count()).select_from(github_outbox).where(github_outbox.c.kind == "culprit")
    ).scalar_one()
    if found:
        raise RuntimeError(f"github_outbox holds {found} culprit row(s): delete them before downgrading")
    _kinds(OLD_KINDS, OLD_KIND_COMMENT, KIND_COMMENT)
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.drop_column("github_comment_id")
