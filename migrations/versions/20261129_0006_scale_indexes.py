"""scale indexes: runs by when they ran

The overview finds each series' newest nightly run by looking at the last days first; this index
makes that (and ``max(measured_at)``) an index range scan instead of a pass over every run.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29 23:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_measured_at", ["measured_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_measured_at")
