"""carried patches and candidate patch count

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 18:19:27.380428
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.models.base

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "carried_patches",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("repository_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("ref", sa.String(length=255), nullable=False, comment="commit sha or refs/pull/N/head"),
        sa.Column(
            "hardware_kind_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
            comment="only for this hardware kind; NULL: every kind",
        ),
        sa.Column("position", sa.Integer(), nullable=False, comment="order of application"),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"],
            ["hardware_kinds.id"],
            name=op.f("fk_carried_patches_hardware_kind_id_hardware_kinds"),
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"],
            ["repositories.id"],
            name=op.f("fk_carried_patches_repository_id_repositories"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_carried_patches")),
        sa.UniqueConstraint(
            "repository_id",
            "ref",
            "hardware_kind_id",
            name=op.f("uq_carried_patches_repository_id_ref_hardware_kind_id"),
        ),
    )
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "patch_count",
                sa.Integer(),
                server_default="0",
                nullable=False,
                comment="0: the plain base commit",
            )
        )
    # Candidates stored before this revision: count their patches.
    op.execute(
        "UPDATE candidates SET patch_count = "
        "(SELECT count(*) FROM candidate_patches WHERE candidate_patches.candidate_id = candidates.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.drop_column("patch_count")

    op.drop_table("carried_patches")
