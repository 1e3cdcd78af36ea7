"""comparisons.reruns_stopped_at: ``/perf cancel`` after a comparison ended stops re-runs on push

Before, ``/perf cancel`` with nothing running stored nothing, and the next push re-ran the last
command. The latest comparison of the pull request now keeps when re-runs were stopped; the next
``/perf`` (a new comparison) starts them again.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01 20:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tracker.models.base import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COMMENT = "/perf cancel after it ended: pushes re-run nothing until the next /perf"


def upgrade() -> None:
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reruns_stopped_at", UTCDateTime(), nullable=True, comment=COMMENT))


def downgrade() -> None:
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.drop_column("reruns_stopped_at")
