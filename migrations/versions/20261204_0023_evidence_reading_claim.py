"""evidence_jobs.reading_until: one reader at a time parses an evidence run's trace

A follow-up after an upload and the scheduler (or a scheduler-less server's housekeeping) both
read the pending evidence rows; each counted its reading and parsed the trace, so two or three
readers parsed one trace at once and only the first summary was kept. A reading now claims the
row until ``reading_until``; another reader skips a row claimed into the future. A claim whose
reader died (its trace killed it) runs out, and the row is read again, up to its read attempts.
NULL: no reading holds the row, which is what every row stored before this revision has.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tracker.models.base import UTCDateTime

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COMMENT = "a reading holds the row until then, UTC; NULL or past: free to read"


def upgrade() -> None:
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reading_until", UTCDateTime(), nullable=True, comment=COMMENT))


def downgrade() -> None:
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.drop_column("reading_until")
