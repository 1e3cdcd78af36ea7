"""notifications: outgoing webhook subscriptions and their transactional outbox

``notification_subscriptions`` holds each receiver: its URL, its body format (Slack-compatible or
generic JSON signed with HMAC-SHA256), the secret that signs it, the events it wants and the
models, hardware kinds and repositories it is limited to (an empty list: all).
``notification_outbox`` holds each delivery, written in the transaction of the event it reports
and sent afterwards with retries; ``dedupe`` makes an event about one subject reach a subscription
once, ``dead_at`` marks a delivery given up (the dead-letter list). ``nightly_runs.notified_at``
makes each nightly's summary queued once (NULL: not yet, which is what every row before it has).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 22:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
FORMATS = ("slack", "json")
EVENTS = ("alert.confirmed", "alert.culprit", "alert.fixed", "pr.verdict", "nightly.summary", "test")
SUBJECTS = ("alert", "group", "comparison", "nightly_run", "subscription")


def _enum(values: Sequence[str], name: str) -> sa.Enum:
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=16)


def _created_at() -> sa.Column[object]:
    return sa.Column(
        "created_at",
        sa.DateTime(timezone=True),
        server_default=sa.text("(CURRENT_TIMESTAMP)"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "notification_subscriptions",
        sa.Column("id", ID, nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False, comment="where deliveries are POSTed"),
        sa.Column(
            "format",
            _enum(FORMATS, "notification_format"),
            nullable=False,
            comment="slack: incoming-webhook JSON; json: generic body signed with the secret",
        ),
        sa.Column("secret", sa.String(length=255), nullable=True, comment="HMAC-SHA256 key; never shown"),
        sa.Column("events", JSON, nullable=False, comment="event kinds it receives"),
        sa.Column("models", JSON, nullable=False, comment="model slugs; empty: all"),
        sa.Column("hardware", JSON, nullable=False, comment="hardware kinds; empty: all"),
        sa.Column("repositories", JSON, nullable=False, comment="owner/name; empty: all"),
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_subscriptions")),
        sa.UniqueConstraint("name", name=op.f("uq_notification_subscriptions_name")),
    )
    op.create_table(
        "notification_outbox",
        sa.Column("id", ID, nullable=False),
        sa.Column("subscription_id", ID, nullable=False),
        sa.Column("event", _enum(EVENTS, "notification_event"), nullable=False),
        sa.Column("subject_kind", _enum(SUBJECTS, "notification_subject"), nullable=False),
        sa.Column("subject_id", ID, nullable=True, comment="the subject's id; NULL for a test"),
        sa.Column(
            "dedupe", sa.String(length=128), nullable=True, comment="one delivery per key and subscription"
        ),
        sa.Column("delivery", sa.String(length=36), nullable=False, comment="the delivery id header"),
        sa.Column("payload", JSON, nullable=False, comment="the event, rendered when sent"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True, comment="the receiver's last HTTP status"),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dead_at", sa.DateTime(timezone=True), nullable=True, comment="given up: a dead letter"),
        _created_at(),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["notification_subscriptions.id"],
            name=op.f("fk_notification_outbox_subscription_id_notification_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_outbox")),
        sa.UniqueConstraint("delivery", name=op.f("uq_notification_outbox_delivery")),
        sa.UniqueConstraint(
            "subscription_id", "dedupe", name=op.f("uq_notification_outbox_subscription_id_dedupe")
        ),
    )
    with op.batch_alter_table("notification_outbox", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_notification_outbox_subscription_id"), ["subscription_id"], unique=False
        )
        batch_op.create_index(
            "ix_notification_outbox_due", ["done_at", "dead_at", "next_attempt_at"], unique=False
        )
    with op.batch_alter_table("nightly_runs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "notified_at",
                sa.DateTime(timezone=True),
                nullable=True,
                comment="when its summary was queued to the notification subscriptions",
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("nightly_runs", schema=None) as batch_op:
        batch_op.drop_column("notified_at")
    with op.batch_alter_table("notification_outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_notification_outbox_due")
        batch_op.drop_index(batch_op.f("ix_notification_outbox_subscription_id"))
    op.drop_table("notification_outbox")
    op.drop_table("notification_subscriptions")
