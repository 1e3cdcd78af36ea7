"""bisection queue and step outcomes: ``alerts.bisection_state`` may be ``queued``; steps' outcomes checked

- ``queued``: an alert whose range between the last good and first bad commits is not stored waits
  for the scheduler to list it from git, outside any request's transaction;
  ``alerts.bisection_listing_since`` says when a process took it to list (one lister at a time).
- ``bisection_steps.outcome`` gains its CHECK (``BisectionOutcome``: pending, good, bad, skipped).

A stored outcome outside those stops the upgrade with the values to fix. The downgrade refuses while
an alert is ``queued`` (the older code could not start its bisection).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 11:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tracker.models.base import UTCDateTime

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_STATES = ("not_needed", "running", "found", "gave_up", "unavailable")
STATES = ("queued", *OLD_STATES)
OUTCOMES = ("pending", "good", "bad", "skipped")
STATE_COMMENT = (
    "queued (range to list), not_needed (adjacent), running, found, gave_up, unavailable; null: not started"
)
OLD_STATE_COMMENT = "not_needed (adjacent), running, found, gave_up, unavailable; null: not started"
OUTCOME_COMMENT = "pending, good, bad, skipped"
OLD_OUTCOME_COMMENT = "good, bad, skipped, pending"

alerts = sa.table("alerts", sa.column("bisection_state", sa.String(16)))
steps = sa.table("bisection_steps", sa.column("outcome", sa.String(16)))


def _check(column: str, values: Sequence[str]) -> str:
    listed = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({listed})"


def _refuse(
    connection: sa.Connection, where: str, column: sa.ColumnClause[str], allowed: Sequence[str], why: str
) -> None:
    found = connection.execute(sa.select(column).where(column.not_in(allowed)).distinct()).scalars().all()
    if found:
        raise RuntimeError(f"{where} holds {sorted(found)}: {why}")


def _bisection_state(values: Sequence[str], comment: str, old_comment: str) -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_alerts_bisection_state"), type_="check")
        batch_op.create_check_constraint(
            batch_op.f("ck_alerts_bisection_state"), _check("bisection_state", values)
        )
        batch_op.alter_column(
            "bisection_state",
            existing_type=sa.String(length=16),
            existing_nullable=True,
            comment=comment,
            existing_comment=old_comment,
        )


LISTING_COMMENT = "when a tracker process took the queued range to list from git"


def upgrade() -> None:
    connection = op.get_bind()
    _refuse(
        connection,
        "bisection_steps.outcome",
        steps.c.outcome,
        OUTCOMES,
        f"only {', '.join(OUTCOMES)} are known; fix those rows first",
    )
    _bisection_state(STATES, STATE_COMMENT, OLD_STATE_COMMENT)
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("bisection_listing_since", UTCDateTime(), nullable=True, comment=LISTING_COMMENT)
        )
    with op.batch_alter_table("bisection_steps", schema=None) as batch_op:
        batch_op.create_check_constraint(
            batch_op.f("ck_bisection_steps_bisection_outcome"), _check("outcome", OUTCOMES)
        )
        batch_op.alter_column(
            "outcome",
            existing_type=sa.String(length=16),
            existing_nullable=False,
            comment=OUTCOME_COMMENT,
            existing_comment=OLD_OUTCOME_COMMENT,
        )


def downgrade() -> None:
    connection = op.get_bind()
    _refuse(
        connection,
        "alerts.bisection_state",
        alerts.c.bisection_state,
        OLD_STATES,
        "request those bisections again after the downgrade",
    )
    with op.batch_alter_table("bisection_steps", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_bisection_steps_bisection_outcome"), type_="check")
        batch_op.alter_column(
            "outcome",
            existing_type=sa.String(length=16),
            existing_nullable=False,
            comment=OLD_OUTCOME_COMMENT,
            existing_comment=OUTCOME_COMMENT,
        )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("bisection_listing_since")
    _bisection_state(OLD_STATES, OLD_STATE_COMMENT, STATE_COMMENT)
