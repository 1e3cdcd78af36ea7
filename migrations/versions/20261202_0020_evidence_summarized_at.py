"""evidence_jobs.summarized_at, read_attempts: an evidence run is read after its upload's answer

Gunzipping and parsing a profiler trace (several MB) took the upload's write transaction with it.
The upload now only links the run (``run_id``, ``recorded_at``); a follow-up after the answer,
the scheduler or a scheduler-less server's housekeeping reads it into ``summary`` and sets
``summarized_at``. A row with ``run_id`` set and ``summarized_at`` NULL waits to be read. Rows
linked before this revision were read at upload: their ``summarized_at`` is their ``recorded_at``.
``read_attempts`` counts the readings begun (each committed before its trace is parsed): a trace
that kills its reader (out of memory) would otherwise be read again, and kill it again, on every
pass; at the limit the row is given up.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 09:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tracker.models.base import UTCDateTime

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COMMENT = "when the run was read into summary, UTC; NULL with run_id set: waiting to be read"
RECORDED = "when the run was stored and linked here, UTC"
RECORDED_BEFORE = "when the run was read, UTC"
ATTEMPTS = "readings begun; a row whose readers never finished (a trace that kills its reader) is given up"


def upgrade() -> None:
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("summarized_at", UTCDateTime(), nullable=True, comment=COMMENT))
        batch_op.add_column(
            sa.Column(
                "read_attempts", sa.Integer(), server_default=sa.text("0"), nullable=False, comment=ATTEMPTS
            )
        )
        batch_op.alter_column(
            "recorded_at",
            existing_type=sa.DateTime(timezone=True),
            existing_nullable=True,
            comment=RECORDED,
            existing_comment=RECORDED_BEFORE,
        )
        batch_op.create_index(batch_op.f("ix_evidence_jobs_summarized_at"), ["summarized_at"], unique=False)
    op.execute(sa.text("UPDATE evidence_jobs SET summarized_at = recorded_at WHERE run_id IS NOT NULL"))


def downgrade() -> None:
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evidence_jobs_summarized_at"))
        batch_op.alter_column(
            "recorded_at",
            existing_type=sa.DateTime(timezone=True),
            existing_nullable=True,
            comment=RECORDED_BEFORE,
            existing_comment=RECORDED,
        )
        batch_op.drop_column("read_attempts")
        batch_op.drop_column("summarized_at")
