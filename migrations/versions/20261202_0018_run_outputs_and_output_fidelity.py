"""run outputs and output fidelity: what each run generated, and how outputs compare

``run_outputs`` and ``run_output_frames`` keep a run's seeded output (digest, shape, lossless PNG
references); a case may set its own PSNR tolerance; comparison results record how head's output
compares with base's; alerts gain the metric ``output`` (an output change between consecutive
commits) with the PSNR and SSIM that found it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 02:31:13.245835
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
METRICS = ("denoise_step_ms", "denoise_stage_ms", "e2e_ms", "peak_memory_mb", "graph_breaks")
OUTPUT_STATUSES = ("identical", "same", "changed", "missing")


def _check(column: str, values: Sequence[str]) -> str:
    listed = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({listed})"


def _alert_metrics(values: Sequence[str]) -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_alerts_metric"), type_="check")
        batch_op.create_check_constraint(batch_op.f("ck_alerts_metric"), _check("metric", values))


def upgrade() -> None:
    op.create_table(
        "run_outputs",
        sa.Column("run_id", ID, nullable=False),
        sa.Column(
            "digest",
            sa.String(length=80),
            nullable=False,
            comment="sha256:<hex> of the decoded RGB pixels, every frame in order",
        ),
        sa.Column("media", sa.String(length=16), nullable=False, comment="image or video"),
        sa.Column("width", sa.Integer(), nullable=False, comment="of the output, pixels"),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("frame_count", sa.Integer(), nullable=False, comment="1 for an image"),
        sa.Column("file_name", sa.String(length=255), nullable=False, comment="as the run saved it"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_outputs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_outputs")),
    )
    op.create_table(
        "run_output_frames",
        sa.Column("run_id", ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False, comment="0, 1, ... in frame order"),
        sa.Column(
            "frame_index",
            sa.Integer(),
            nullable=False,
            comment="the frame of the output it shows (0 for an image)",
        ),
        sa.Column("width", sa.Integer(), nullable=False, comment="of the reference, pixels"),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("png", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["run_outputs.run_id"],
            name=op.f("fk_run_output_frames_run_id_run_outputs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "position", name=op.f("pk_run_output_frames")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "output_psnr_db",
                sa.Float(),
                nullable=True,
                comment="output alerts: lowest PSNR of the first bad commit's output against the last good's",
            )
        )
        batch_op.add_column(
            sa.Column(
                "output_ssim", sa.Float(), nullable=True, comment="output alerts: lowest SSIM, same frames"
            )
        )
    _alert_metrics((*METRICS, "output"))
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "output_psnr_db",
                sa.Float(),
                nullable=True,
                comment="PSNR at or above which two outputs count as the same picture; null: the default",
            )
        )
    with op.batch_alter_table("comparison_results", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "output_status",
                sa.Enum(
                    *OUTPUT_STATUSES,
                    name="output_status",
                    native_enum=False,
                    create_constraint=True,
                    length=16,
                ),
                nullable=True,
                comment="head's seeded output against base's; null: not checked",
            )
        )
        batch_op.add_column(
            sa.Column(
                "output_psnr_db", sa.Float(), nullable=True, comment="lowest PSNR over the compared frames"
            )
        )
        batch_op.add_column(
            sa.Column(
                "output_ssim", sa.Float(), nullable=True, comment="lowest SSIM over the compared frames"
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("comparison_results", schema=None) as batch_op:
        batch_op.drop_column("output_ssim")
        batch_op.drop_column("output_psnr_db")
        batch_op.drop_constraint(batch_op.f("ck_comparison_results_output_status"), type_="check")
        batch_op.drop_column("output_status")
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.drop_column("output_psnr_db")
    # Output alerts cannot be kept under the old constraint.
    op.execute(
        sa.text("DELETE FROM alert_events WHERE alert_id IN (SELECT id FROM alerts WHERE metric = 'output')")
    )
    op.execute(
        sa.text(
            "DELETE FROM bisection_steps WHERE alert_id IN (SELECT id FROM alerts WHERE metric = 'output')"
        )
    )
    op.execute(sa.text("DELETE FROM alerts WHERE metric = 'output'"))
    _alert_metrics(METRICS)
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("output_ssim")
        batch_op.drop_column("output_psnr_db")
    op.drop_table("run_output_frames")
    op.drop_table("run_outputs")
