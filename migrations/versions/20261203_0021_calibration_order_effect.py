"""calibrations.order_effect_pct, _low_pct, _high_pct: what running second does to a run

Every comparison now alternates its arms' order (A B, B A, ...); an A/A calibration reads its
rounds in the order they ran and stores the order effect, the second run of a round against the
first, with its 95 % interval. Calibrations stored before this revision ran every round base
first and did not measure it: their columns stay NULL ("not measured"), never a guess.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EFFECT = "second run of a round vs the first, % (negative: faster); NULL: not measured"
LOW = "its 95 % interval's low end, %"
HIGH = "its 95 % interval's high end, %"


def upgrade() -> None:
    with op.batch_alter_table("calibrations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("order_effect_pct", sa.Float(), nullable=True, comment=EFFECT))
        batch_op.add_column(sa.Column("order_effect_low_pct", sa.Float(), nullable=True, comment=LOW))
        batch_op.add_column(sa.Column("order_effect_high_pct", sa.Float(), nullable=True, comment=HIGH))


def downgrade() -> None:
    with op.batch_alter_table("calibrations", schema=None) as batch_op:
        batch_op.drop_column("order_effect_high_pct")
        batch_op.drop_column("order_effect_low_pct")
        batch_op.drop_column("order_effect_pct")
