"""github inbox: webhook deliveries are stored and carried out after the answer

``github_deliveries`` gains the event (``payload``), its ``state`` (pending, done, failed: rows
from before are done), the retry bookkeeping (``attempts``, ``next_attempt_at``, ``last_error``)
and ``handled_at``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 07:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from tracker.models.base import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("github_deliveries", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "state",
                sa.Enum(
                    "pending",
                    "done",
                    "failed",
                    name="delivery_state",
                    native_enum=False,
                    create_constraint=True,
                    length=16,
                ),
                server_default="done",
                nullable=False,
            )
        )
        batch_op.add_column(
            sa.Column(
                "payload",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
                comment="the event, as the bot reads it",
            )
        )
        batch_op.add_column(sa.Column("attempts", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("next_attempt_at", UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("handled_at", UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_github_deliveries_due", ["state", "next_attempt_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("github_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_github_deliveries_due")
        batch_op.drop_column("handled_at")
        batch_op.drop_column("last_error")
        batch_op.drop_column("next_attempt_at")
        batch_op.drop_column("attempts")
        batch_op.drop_column("payload")
        # SQLite rebuilds the table from its reflected constraints: the column's CHECK goes first.
        batch_op.drop_constraint(batch_op.f("ck_github_deliveries_delivery_state"), type_="check")
        batch_op.drop_column("state")
