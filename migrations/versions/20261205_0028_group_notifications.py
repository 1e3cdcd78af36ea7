"""group notifications: alert events become group events, each told once per group

- ``notification_outbox.event`` and ``notification_subscriptions.events``: ``alert.confirmed``,
  ``alert.culprit`` and ``alert.fixed`` are renamed ``group.confirmed``, ``group.culprit`` and
  ``group.fixed``; stored values are mapped (the downgrade maps them back).
- ``alert_groups.confirmed_at``, ``culprit_named_at``, ``fixed_at``: when each group event happened
  and was told (NULL: not yet). ``alerts.confirmed_at``: when the alert was first seen confirmed in a
  group, so regrouping never tells it again.

The backfill counts what exists as told already: a grouped confirmed alert (paired rounds, imported
results held, an output change) from its creation, its group confirmed from the group's creation, a
group with a culprit as named, a group whose alerts are all closed with one fixed as fixed. An upgrade
therefore sends nothing about old groups.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-05 22:30:00.000000
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMED = {
    "alert.confirmed": "group.confirmed",
    "alert.culprit": "group.culprit",
    "alert.fixed": "group.fixed",
}
OTHER_EVENTS = ("pr.verdict", "nightly.summary", "test")
TOLD_CONFIRMATIONS = ("confirmed", "held", "not_needed")
GROUP_COLUMNS = {
    "confirmed_at": "UTC, group.confirmed told; NULL: not yet",
    "culprit_named_at": "UTC, group.culprit told; NULL: not yet",
    "fixed_at": "UTC, group.fixed told; NULL: not yet",
}
ALERT_COMMENT = "UTC, first seen confirmed in a group; NULL: not yet (told once per group)"

outbox = sa.table("notification_outbox", sa.column("event", sa.String(16)))
subscriptions = sa.table(
    "notification_subscriptions", sa.column("id", sa.Integer()), sa.column("events", sa.JSON())
)


def _events(mapping: Mapping[str, str]) -> None:
    """Rename the stored events: the outbox's check constraint is replaced around the update."""
    listed = ", ".join(f"'{value}'" for value in (*mapping.values(), *OTHER_EVENTS))
    with op.batch_alter_table("notification_outbox", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_notification_outbox_notification_event"), type_="check")
    for old, new in mapping.items():
        op.execute(outbox.update().where(outbox.c.event == old).values(event=new))
    with op.batch_alter_table("notification_outbox", schema=None) as batch_op:
        batch_op.create_check_constraint(
            batch_op.f("ck_notification_outbox_notification_event"), f"event IN ({listed})"
        )
    connection = op.get_bind()
    for row in connection.execute(sa.select(subscriptions.c.id, subscriptions.c.events)).all():
        events = [mapping.get(event, event) for event in row.events]
        if events != list(row.events):
            connection.execute(
                subscriptions.update().where(subscriptions.c.id == row.id).values(events=events)
            )


def _backfill() -> None:
    """What exists counts as told (see the module's docstring)."""
    told = ", ".join(f"'{value}'" for value in TOLD_CONFIRMATIONS)
    op.execute(
        f"UPDATE alerts SET confirmed_at = created_at "  # noqa: S608 (the constants above)
        f"WHERE group_id IS NOT NULL AND confirmation IN ({told})"
    )
    op.execute(
        "UPDATE alert_groups SET confirmed_at = created_at "
        "WHERE EXISTS (SELECT 1 FROM alerts WHERE alerts.group_id = alert_groups.id)"
    )
    op.execute(
        "UPDATE alert_groups SET culprit_named_at = COALESCE(updated_at, created_at) "
        "WHERE culprit_commit_id IS NOT NULL"
    )
    op.execute(
        "UPDATE alert_groups SET fixed_at = COALESCE(updated_at, created_at) "
        "WHERE EXISTS (SELECT 1 FROM alerts WHERE alerts.group_id = alert_groups.id AND status = 'fixed') "
        "AND NOT EXISTS (SELECT 1 FROM alerts WHERE alerts.group_id = alert_groups.id "
        "AND status IN ('open', 'acknowledged'))"
    )


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True, comment=ALERT_COMMENT)
        )
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        for name, comment in GROUP_COLUMNS.items():
            batch_op.add_column(sa.Column(name, sa.DateTime(timezone=True), nullable=True, comment=comment))
    _backfill()
    _events(RENAMED)


def downgrade() -> None:
    _events({new: old for old, new in RENAMED.items()})
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        for name in reversed(GROUP_COLUMNS):
            batch_op.drop_column(name)
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("confirmed_at")
