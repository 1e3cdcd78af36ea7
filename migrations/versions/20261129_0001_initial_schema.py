"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 17:47:38.852401
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import tracker.models.base

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column(
            "role",
            sa.Enum(
                "runner", "admin", name="token_role", native_enum=False, create_constraint=True, length=16
            ),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(length=64), nullable=False, comment="hex SHA-256"),
        sa.Column(
            "prefix", sa.String(length=16), nullable=False, comment="first characters, to tell tokens apart"
        ),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.Column("last_used_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "hardware_kinds",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hardware_kinds")),
        sa.UniqueConstraint("name", name=op.f("uq_hardware_kinds_name")),
    )
    op.create_table(
        "repositories",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("url", sa.String(length=512), nullable=False, comment="clone URL or local path"),
        sa.Column("default_branch", sa.String(length=255), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repositories")),
        sa.UniqueConstraint("name", name=op.f("uq_repositories_name")),
    )
    op.create_table(
        "cases",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("slug", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("config_hash", sa.String(length=64), nullable=False),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.Column("suite", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False, comment="model path, e.g. Qwen/Qwen-Image"),
        sa.Column(
            "model_family",
            sa.String(length=128),
            nullable=False,
            comment="groups cases of one model on the overview",
        ),
        sa.Column("task", sa.String(length=32), nullable=False, comment="t2i, t2v, i2i, ..."),
        sa.Column(
            "workload",
            sa.Enum("sglang", "toy", name="workload", native_enum=False, create_constraint=True, length=16),
            nullable=False,
        ),
        sa.Column(
            "mode",
            sa.Enum(
                "generate", "serve", name="run_mode", native_enum=False, create_constraint=True, length=16
            ),
            nullable=False,
        ),
        sa.Column("repository_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("num_gpus", sa.Integer(), nullable=False),
        sa.Column(
            "threshold_pct",
            sa.Float(),
            nullable=False,
            comment="model threshold in percent; per-hardware overrides apart",
        ),
        sa.Column(
            "params",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="generation parameters (prompt, size, steps, seed)",
        ),
        sa.Column(
            "flags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="serving flags (compile, warmup, offload, parallelism)",
        ),
        sa.Column("requests", sa.Integer(), nullable=False, comment="timed requests per run"),
        sa.Column("timeout_s", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"], ["repositories.id"], name=op.f("fk_cases_repository_id_repositories")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cases")),
        sa.UniqueConstraint("slug", "config_hash", name=op.f("uq_cases_slug_config_hash")),
        sa.UniqueConstraint("slug", "version", name=op.f("uq_cases_slug_version")),
    )
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.create_index("ix_cases_slug_current", ["slug", "is_current"], unique=False)

    op.create_table(
        "commits",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("repository_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("sha", sa.String(length=40), nullable=False),
        sa.Column(
            "parents",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="parent shas, first parent first",
        ),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("author_name", sa.String(length=255), nullable=False),
        sa.Column("author_email", sa.String(length=255), nullable=False),
        sa.Column(
            "committed_at", tracker.models.base.UTCDateTime(timezone=True), nullable=False, comment="UTC"
        ),
        sa.Column("committed_at_estimated", sa.Boolean(), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"], ["repositories.id"], name=op.f("fk_commits_repository_id_repositories")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_commits")),
        sa.UniqueConstraint("repository_id", "sha", name=op.f("uq_commits_repository_id_sha")),
    )
    with op.batch_alter_table("commits", schema=None) as batch_op:
        batch_op.create_index("ix_commits_repository_time", ["repository_id", "committed_at"], unique=False)

    op.create_table(
        "runners",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("token_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column(
            "labels",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("last_heartbeat_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"],
            ["hardware_kinds.id"],
            name=op.f("fk_runners_hardware_kind_id_hardware_kinds"),
        ),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], name=op.f("fk_runners_token_id_api_tokens")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runners")),
        sa.UniqueConstraint("name", name=op.f("uq_runners_name")),
    )
    op.create_table(
        "alerts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "metric",
            sa.Enum(
                "denoise_step_ms",
                "denoise_stage_ms",
                "e2e_ms",
                "peak_memory_mb",
                "graph_breaks",
                name="metric",
                native_enum=False,
                create_constraint=True,
            ),
            nullable=False,
        ),
        sa.Column(
            "direction",
            sa.Enum(
                "regression",
                "improvement",
                name="direction",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column(
            "status",
            sa.Enum(
                "open",
                "acknowledged",
                "fixed",
                "invalid",
                "expected",
                name="alert_status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("last_good_commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column(
            "first_bad_commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("culprit_commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("fixed_by_commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("before_value", sa.Float(), nullable=False),
        sa.Column("after_value", sa.Float(), nullable=False),
        sa.Column("change_pct", sa.Float(), nullable=False),
        sa.Column("threshold_pct", sa.Float(), nullable=False, comment="threshold that applied"),
        sa.Column(
            "noise_pct", sa.Float(), nullable=True, comment="series run-to-run noise, % (None: unknown)"
        ),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column(
            "single_run_basis",
            sa.Boolean(),
            nullable=False,
            comment="rests on single runs without a noise estimate",
        ),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.Column("bisection_state", sa.String(length=16), nullable=True, comment="running, found, gave_up"),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.Column("updated_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_alerts_case_id_cases")),
        sa.ForeignKeyConstraint(
            ["culprit_commit_id"], ["commits.id"], name=op.f("fk_alerts_culprit_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["first_bad_commit_id"], ["commits.id"], name=op.f("fk_alerts_first_bad_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["fixed_by_commit_id"], ["commits.id"], name=op.f("fk_alerts_fixed_by_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"],
            ["hardware_kinds.id"],
            name=op.f("fk_alerts_hardware_kind_id_hardware_kinds"),
        ),
        sa.ForeignKeyConstraint(
            ["last_good_commit_id"], ["commits.id"], name=op.f("fk_alerts_last_good_commit_id_commits")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
        sa.UniqueConstraint(
            "case_id",
            "hardware_kind_id",
            "metric",
            "first_bad_commit_id",
            name=op.f("uq_alerts_case_id_hardware_kind_id_metric_first_bad_commit_id"),
        ),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index("ix_alerts_status", ["status", "created_at"], unique=False)

    op.create_table(
        "candidates",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("repository_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("base_commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["base_commit_id"], ["commits.id"], name=op.f("fk_candidates_base_commit_id_commits")
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"], ["repositories.id"], name=op.f("fk_candidates_repository_id_repositories")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_candidates")),
        sa.UniqueConstraint("key", name=op.f("uq_candidates_key")),
    )
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_candidates_base_commit_id"), ["base_commit_id"], unique=False)

    op.create_table(
        "case_hardware",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("threshold_pct", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["case_id"], ["cases.id"], name=op.f("fk_case_hardware_case_id_cases"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"],
            ["hardware_kinds.id"],
            name=op.f("fk_case_hardware_hardware_kind_id_hardware_kinds"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_hardware")),
        sa.UniqueConstraint(
            "case_id", "hardware_kind_id", name=op.f("uq_case_hardware_case_id_hardware_kind_id")
        ),
    )
    op.create_table(
        "alert_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("alert_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "from_status",
            sa.Enum(
                "open",
                "acknowledged",
                "fixed",
                "invalid",
                "expected",
                name="from_status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=True,
        ),
        sa.Column(
            "to_status",
            sa.Enum(
                "open",
                "acknowledged",
                "fixed",
                "invalid",
                "expected",
                name="to_status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("actor", sa.String(length=255), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_alert_events_alert_id_alerts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_events")),
    )
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_events_alert_id"), ["alert_id"], unique=False)

    op.create_table(
        "bisection_steps",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("alert_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False, comment="good, bad, skipped, pending"),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_bisection_steps_alert_id_alerts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["commit_id"], ["commits.id"], name=op.f("fk_bisection_steps_commit_id_commits")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bisection_steps")),
        sa.UniqueConstraint("alert_id", "position", name=op.f("uq_bisection_steps_alert_id_position")),
    )
    op.create_table(
        "candidate_patches",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("candidate_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "commit", "pull", name="patch_kind", native_enum=False, create_constraint=True, length=16
            ),
            nullable=False,
        ),
        sa.Column(
            "ref",
            sa.String(length=255),
            nullable=False,
            comment="commit sha or PR ref such as refs/pull/43601/head",
        ),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column(
            "resolved_sha", sa.String(length=40), nullable=True, comment="sha the ref pointed to when built"
        ),
        sa.Column("title", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["candidate_id"],
            ["candidates.id"],
            name=op.f("fk_candidate_patches_candidate_id_candidates"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_candidate_patches")),
        sa.UniqueConstraint(
            "candidate_id", "position", name=op.f("uq_candidate_patches_candidate_id_position")
        ),
    )
    op.create_table(
        "comparisons",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("repository_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("base_candidate_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("head_candidate_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "pending",
                "running",
                "done",
                "cancelled",
                "failed",
                name="comparison_state",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("rounds", sa.Integer(), nullable=False, comment="rounds asked for"),
        sa.Column("max_rounds", sa.Integer(), nullable=False, comment="cap when inconclusive"),
        sa.Column("requests_per_round", sa.Integer(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("pr_url", sa.String(length=512), nullable=True),
        sa.Column("command", sa.Text(), nullable=False, comment="e.g. the /perf comment"),
        sa.Column("requested_by", sa.String(length=255), nullable=False),
        sa.Column("github_comment_id", sa.Integer(), nullable=True),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.Column("finished_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["base_candidate_id"], ["candidates.id"], name=op.f("fk_comparisons_base_candidate_id_candidates")
        ),
        sa.ForeignKeyConstraint(
            ["head_candidate_id"], ["candidates.id"], name=op.f("fk_comparisons_head_candidate_id_candidates")
        ),
        sa.ForeignKeyConstraint(
            ["repository_id"], ["repositories.id"], name=op.f("fk_comparisons_repository_id_repositories")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparisons")),
    )
    op.create_table(
        "comparison_results",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("comparison_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "verdict",
            sa.Enum(
                "pending",
                "regression",
                "improvement",
                "no_change",
                "inconclusive",
                name="verdict",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("base_value", sa.Float(), nullable=True, comment="ms per denoise step"),
        sa.Column("head_value", sa.Float(), nullable=True),
        sa.Column("change_pct", sa.Float(), nullable=True),
        sa.Column("ci_low_pct", sa.Float(), nullable=True, comment="95 % CI of change_pct"),
        sa.Column("ci_high_pct", sa.Float(), nullable=True),
        sa.Column("rounds_done", sa.Integer(), nullable=False),
        sa.Column("threshold_pct", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("updated_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_comparison_results_case_id_cases")),
        sa.ForeignKeyConstraint(
            ["comparison_id"],
            ["comparisons.id"],
            name=op.f("fk_comparison_results_comparison_id_comparisons"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"],
            ["hardware_kinds.id"],
            name=op.f("fk_comparison_results_hardware_kind_id_hardware_kinds"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparison_results")),
        sa.UniqueConstraint(
            "comparison_id",
            "case_id",
            "hardware_kind_id",
            name=op.f("uq_comparison_results_comparison_id_case_id_hardware_kind_id"),
        ),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=False),
        sa.Column("candidate_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("num_gpus", sa.Integer(), nullable=False),
        sa.Column(
            "reason",
            sa.Enum(
                "nightly",
                "pr",
                "bisect",
                "confirm",
                "manual",
                name="job_reason",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("priority", sa.Integer(), nullable=False, comment="higher runs first"),
        sa.Column(
            "state",
            sa.Enum(
                "queued",
                "leased",
                "done",
                "failed",
                "cancelled",
                name="job_state",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column(
            "attempt_history",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("leased_by_runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("leased_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lease_expires_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("comparison_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("comparison_round", sa.Integer(), nullable=True),
        sa.Column(
            "arm",
            sa.Enum("base", "head", name="arm", native_enum=False, create_constraint=True, length=16),
            nullable=True,
        ),
        sa.Column(
            "alert_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
            comment="confirm/bisect jobs",
        ),
        sa.Column("requested_by", sa.String(length=255), nullable=False),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.Column("finished_at", tracker.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_jobs_alert_id_alerts"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["candidate_id"], ["candidates.id"], name=op.f("fk_jobs_candidate_id_candidates")
        ),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_jobs_case_id_cases")),
        sa.ForeignKeyConstraint(
            ["comparison_id"],
            ["comparisons.id"],
            name=op.f("fk_jobs_comparison_id_comparisons"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"], ["hardware_kinds.id"], name=op.f("fk_jobs_hardware_kind_id_hardware_kinds")
        ),
        sa.ForeignKeyConstraint(
            ["leased_by_runner_id"],
            ["runners.id"],
            name=op.f("fk_jobs_leased_by_runner_id_runners"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_jobs_idempotency_key")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_jobs_candidate_id"), ["candidate_id"], unique=False)
        batch_op.create_index("ix_jobs_claim", ["state", "hardware_kind_id", "priority", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_jobs_comparison_id"), ["comparison_id"], unique=False)
        batch_op.create_index("ix_jobs_lease_expiry", ["state", "lease_expires_at"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=False),
        sa.Column(
            "payload_digest",
            sa.String(length=64),
            nullable=False,
            comment="SHA-256 of the upload, to tell a retry from a key reuse",
        ),
        sa.Column(
            "source",
            sa.Enum("job", "import", name="run_source", native_enum=False, create_constraint=True, length=16),
            nullable=False,
        ),
        sa.Column(
            "status",
            sa.Enum("ok", "failed", name="run_status", native_enum=False, create_constraint=True, length=16),
            nullable=False,
        ),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("case_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("hardware_kind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("candidate_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "commit_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
            comment="the candidate's base commit",
        ),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("denoise_step_ms", sa.Float(), nullable=True, comment="value of record, ms"),
        sa.Column("denoise_step_basis", sa.String(length=16), nullable=True, comment="median or mean"),
        sa.Column("denoise_step_count", sa.Integer(), nullable=True),
        sa.Column("denoise_step_mean_ms", sa.Float(), nullable=True),
        sa.Column("denoise_step_median_ms", sa.Float(), nullable=True),
        sa.Column(
            "denoise_step_first_ms", sa.Float(), nullable=True, comment="step 0 (compile, warm caches)"
        ),
        sa.Column("denoise_step_steady_ms", sa.Float(), nullable=True, comment="median of steps 1..n-1"),
        sa.Column("denoise_step_iqr_ms", sa.Float(), nullable=True, comment="interquartile range of steps"),
        sa.Column("denoise_stage_ms", sa.Float(), nullable=True),
        sa.Column("e2e_ms", sa.Float(), nullable=True),
        sa.Column("peak_memory_mb", sa.Float(), nullable=True, comment="MiB"),
        sa.Column("graph_breaks", sa.Integer(), nullable=True),
        sa.Column("recompiles", sa.Integer(), nullable=True),
        sa.Column("unique_graphs", sa.Integer(), nullable=True),
        sa.Column("frames_compiled", sa.Integer(), nullable=True),
        sa.Column("requests_seen", sa.Integer(), nullable=False),
        sa.Column("warmup_requests", sa.Integer(), nullable=False),
        sa.Column(
            "warnings",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "sources",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="log, perf_dump, performance_log",
        ),
        sa.Column(
            "measured_at",
            tracker.models.base.UTCDateTime(timezone=True),
            nullable=True,
            comment="when it ran, UTC",
        ),
        sa.Column(
            "created_at",
            tracker.models.base.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["candidate_id"], ["candidates.id"], name=op.f("fk_runs_candidate_id_candidates")
        ),
        sa.ForeignKeyConstraint(["case_id"], ["cases.id"], name=op.f("fk_runs_case_id_cases")),
        sa.ForeignKeyConstraint(["commit_id"], ["commits.id"], name=op.f("fk_runs_commit_id_commits")),
        sa.ForeignKeyConstraint(
            ["hardware_kind_id"], ["hardware_kinds.id"], name=op.f("fk_runs_hardware_kind_id_hardware_kinds")
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_runs_job_id_jobs"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"], ["runners.id"], name=op.f("fk_runs_runner_id_runners"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_runs_idempotency_key")),
        sa.UniqueConstraint("job_id", "attempt", name=op.f("uq_runs_job_id_attempt")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_candidate_id"), ["candidate_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_commit_id"), ["commit_id"], unique=False)
        batch_op.create_index(
            "ix_runs_series", ["case_id", "hardware_kind_id", "status", "commit_id"], unique=False
        )

    op.create_table(
        "run_artifacts",
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "step_times_ms",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="per denoise step, ms, step 0 first",
        ),
        sa.Column(
            "environment",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="GPU, driver, CUDA, torch, sglang, clocks, host",
        ),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("raw_log", sa.Text(), nullable=False),
        sa.Column("log_truncated", sa.Boolean(), nullable=False),
        sa.Column(
            "perf_dump",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "output_digest", sa.String(length=128), nullable=True, comment="hash of the generated output"
        ),
        sa.Column(
            "patches_applied",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="patch refs cherry-picked for this run",
        ),
        sa.Column(
            "patches_already_in",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="carried patches the base already had",
        ),
        sa.Column("tree_sha", sa.String(length=40), nullable=True, comment="git tree the benchmark ran"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_artifacts_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_artifacts")),
    )
    op.create_table(
        "run_stages",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_stages_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_stages")),
        sa.UniqueConstraint("run_id", "position", name=op.f("uq_run_stages_run_id_position")),
    )


def downgrade() -> None:
    op.drop_table("run_stages")
    op.drop_table("run_artifacts")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_series")
        batch_op.drop_index(batch_op.f("ix_runs_commit_id"))
        batch_op.drop_index(batch_op.f("ix_runs_candidate_id"))

    op.drop_table("runs")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_lease_expiry")
        batch_op.drop_index(batch_op.f("ix_jobs_comparison_id"))
        batch_op.drop_index("ix_jobs_claim")
        batch_op.drop_index(batch_op.f("ix_jobs_candidate_id"))

    op.drop_table("jobs")
    op.drop_table("comparison_results")
    op.drop_table("comparisons")
    op.drop_table("candidate_patches")
    op.drop_table("bisection_steps")
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_events_alert_id"))

    op.drop_table("alert_events")
    op.drop_table("case_hardware")
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_candidates_base_commit_id"))

    op.drop_table("candidates")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("ix_alerts_status")

    op.drop_table("alerts")
    op.drop_table("runners")
    with op.batch_alter_table("commits", schema=None) as batch_op:
        batch_op.drop_index("ix_commits_repository_time")

    op.drop_table("commits")
    with op.batch_alter_table("cases", schema=None) as batch_op:
        batch_op.drop_index("ix_cases_slug_current")

    op.drop_table("cases")
    op.drop_table("repositories")
    op.drop_table("hardware_kinds")
    op.drop_table("api_tokens")
