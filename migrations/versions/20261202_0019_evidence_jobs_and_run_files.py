"""evidence jobs and run files: a culprit's profiled re-runs and the traces they upload

Jobs gain the reason ``evidence``; ``evidence_jobs`` says what each such job is evidence for (an
alert's culprit or a comparison result's regression) and keeps what its run showed; ``run_files``
holds the files a run uploads with its result (a gzipped profiler trace).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 02:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
REASONS = ("nightly", "pr", "bisect", "confirm", "manual")


def _check(column: str, values: Sequence[str]) -> str:
    listed = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({listed})"


def _job_reasons(values: Sequence[str]) -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_jobs_job_reason"), type_="check")
        batch_op.create_check_constraint(batch_op.f("ck_jobs_job_reason"), _check("reason", values))


def upgrade() -> None:
    _job_reasons((*REASONS, "evidence"))
    op.create_table(
        "evidence_jobs",
        sa.Column("job_id", ID, nullable=False),
        sa.Column("alert_id", ID, nullable=True, comment="the alert whose culprit it shows"),
        sa.Column(
            "comparison_result_id",
            ID,
            nullable=True,
            comment="the comparison result whose regression it shows",
        ),
        sa.Column(
            "side",
            sa.Enum("base", "head", name="arm", native_enum=False, create_constraint=True, length=16),
            nullable=False,
            comment="base: last good commit; head: the culprit",
        ),
        sa.Column("run_id", ID, nullable=True, comment="the run that answered the job"),
        sa.Column(
            "summary",
            JSON,
            nullable=True,
            comment="read from the run: graph breaks [{site, reason}], per-operator self time ms/step, steps",
        ),
        sa.Column(
            "recorded_at", sa.DateTime(timezone=True), nullable=True, comment="when the run was read, UTC"
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_evidence_jobs_alert_id_alerts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["comparison_result_id"],
            ["comparison_results.id"],
            name=op.f("fk_evidence_jobs_comparison_result_id_comparison_results"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_evidence_jobs_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_evidence_jobs_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_evidence_jobs")),
    )
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_evidence_jobs_alert_id"), ["alert_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_evidence_jobs_comparison_result_id"), ["comparison_result_id"], unique=False
        )
    op.create_table(
        "run_files",
        sa.Column("id", ID, nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False, comment="file name, no directories"),
        sa.Column("media_type", sa.String(length=128), nullable=False, comment="as served"),
        sa.Column("kind", sa.String(length=32), nullable=False, comment="what it is: trace"),
        sa.Column("size_bytes", sa.Integer(), nullable=False, comment="of content, bytes"),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_files_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_files")),
        sa.UniqueConstraint("run_id", "name", name=op.f("uq_run_files_run_id_name")),
    )
    with op.batch_alter_table("run_files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_files_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("run_files", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_files_run_id"))
    op.drop_table("run_files")
    with op.batch_alter_table("evidence_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evidence_jobs_comparison_result_id"))
        batch_op.drop_index(batch_op.f("ix_evidence_jobs_alert_id"))
    op.drop_table("evidence_jobs")
    op.execute(sa.text("DELETE FROM jobs WHERE reason = 'evidence'"))
    _job_reasons(REASONS)
