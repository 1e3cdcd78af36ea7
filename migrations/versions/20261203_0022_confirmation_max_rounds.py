"""cases.confirmation_max_rounds, case_hardware.confirmation_max_rounds: a raised cap on paired rounds

A suspect is confirmed by paired rounds that grow up to a cap (16, tracker.detection.confirmation);
a case whose rounds are too noisy to settle a change within it can raise it in its suite file, for
the case or for one hardware kind, at the cost of up to two runs a round. NULL keeps the policy's
cap (on a hardware kind: the case's), which is what every case stored before this revision had.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CASE = "cap on a suspect's paired rounds (each two runs); null: the policy's"
KIND = "the case's cap on paired rounds on this kind; null: the case's"


def upgrade() -> None:
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("confirmation_max_rounds", sa.Integer(), nullable=True, comment=CASE))
    with op.batch_alter_table("case_hardware", schema=None) as batch_op:
        batch_op.add_column(sa.Column("confirmation_max_rounds", sa.Integer(), nullable=True, comment=KIND))


def downgrade() -> None:
    with op.batch_alter_table("case_hardware", schema=None) as batch_op:
        batch_op.drop_column("confirmation_max_rounds")
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.drop_column("confirmation_max_rounds")
