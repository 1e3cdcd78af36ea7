"""states as enums: alert confirmation and bisection state, outbox kind; job attempts as rows

- ``alerts.confirmation`` and ``alerts.bisection_state`` keep their values and gain their CHECK
  constraints (``AlertConfirmation``, ``BisectionState``). ``alerts.confirmed`` is dropped: it is
  ``confirmation in (confirmed, held)``. Where the two disagree the confirmation stands, except on
  alerts raised before confirmations were recorded (``not_needed`` with ``confirmed`` set), which
  become ``confirmed``. The downgrade sets ``confirmed`` from the confirmation.
- ``github_outbox.kind`` gains its CHECK (``OutboxKind``) and shrinks to 16 characters.
- ``jobs.attempt_history``, a JSON list of ``{attempt, runner, outcome, reason, at}``, becomes the
  rows of ``job_attempts``: the runner's name becomes its id (runners are never renamed or deleted;
  a name no runner has leaves it empty), ``at`` the end time; when those attempts started is not
  known. The downgrade writes the JSON lists back from the rows.

A stored value outside its enum stops the upgrade with the values to fix; nothing is guessed.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 08:03:53
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from tracker.models.base import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The enums' values as this revision knows them (the models may grow more later).
CONFIRMATIONS = ("pending", "confirmed", "held", "refuted", "too_noisy", "not_possible", "not_needed")
ESTABLISHED = ("confirmed", "held")
BISECTION_STATES = ("not_needed", "running", "found", "gave_up", "unavailable")
OUTBOX_KINDS = ("comment", "reply", "reaction", "status")
ATTEMPT_OUTCOMES = ("done", "failed", "released", "lease expired")
CHUNK = 2000

JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

alerts = sa.table(
    "alerts",
    sa.column("id", BigId),
    sa.column("confirmed", sa.Boolean()),
    sa.column("confirmation", sa.String(16)),
    sa.column("bisection_state", sa.String(16)),
)
github_outbox = sa.table("github_outbox", sa.column("kind", sa.String(32)))
jobs = sa.table(
    "jobs",
    sa.column("id", BigId),
    sa.column("attempt_history", JSONType),
    sa.column("finished_at", UTCDateTime()),
    sa.column("created_at", UTCDateTime()),
)
runners = sa.table("runners", sa.column("id", BigId), sa.column("name", sa.String(128)))
job_attempts = sa.table(
    "job_attempts",
    sa.column("job_id", BigId),
    sa.column("number", sa.Integer()),
    sa.column("runner_id", BigId),
    sa.column("outcome", sa.String(16)),
    sa.column("reason", sa.Text()),
    sa.column("started_at", UTCDateTime()),
    sa.column("ended_at", UTCDateTime()),
)

CONFIRMATION_COMMENT = (
    "pending, confirmed (paired rounds), held (later runs held), refuted, too_noisy, not_possible"
)
OLD_CONFIRMATION_COMMENT = (
    "pending, confirmed (re-run held), held (later runs held), refuted, not_possible (imports)"
)
BISECTION_COMMENT = "not_needed (adjacent), running, found, gave_up, unavailable; null: not started"
OLD_BISECTION_COMMENT = "not_needed (adjacent), running, found, gave_up, unavailable"


def _enum(values: Sequence[str], name: str) -> sa.Enum:
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=16)


def upgrade() -> None:
    connection = op.get_bind()
    _refuse_unknown(connection, alerts.c.confirmation, CONFIRMATIONS)
    _refuse_unknown(connection, alerts.c.bisection_state, BISECTION_STATES)
    _refuse_unknown(connection, github_outbox.c.kind, OUTBOX_KINDS)
    connection.execute(
        sa.update(alerts)
        .where(alerts.c.confirmed == sa.true(), alerts.c.confirmation == "not_needed")
        .values(confirmation="confirmed")
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("confirmed")
        batch_op.alter_column(
            "confirmation",
            existing_type=sa.String(length=16),
            type_=_enum(CONFIRMATIONS, "alert_confirmation"),
            existing_nullable=False,
            existing_server_default="not_needed",
            comment=CONFIRMATION_COMMENT,
            existing_comment=OLD_CONFIRMATION_COMMENT,
        )
        batch_op.alter_column(
            "bisection_state",
            existing_type=sa.String(length=16),
            type_=_enum(BISECTION_STATES, "bisection_state"),
            existing_nullable=True,
            comment=BISECTION_COMMENT,
            existing_comment=OLD_BISECTION_COMMENT,
        )
    with op.batch_alter_table("github_outbox", schema=None) as batch_op:
        batch_op.alter_column(
            "kind",
            existing_type=sa.String(length=32),
            type_=_enum(OUTBOX_KINDS, "outbox_kind"),
            existing_nullable=False,
            comment="comment, reply, reaction, status",
            existing_comment="comment, reaction, status",
        )

    op.create_table(
        "job_attempts",
        sa.Column("id", BigId, nullable=False),
        sa.Column("job_id", BigId, nullable=False),
        sa.Column("number", sa.Integer(), nullable=False, comment="the job's attempt counter, from 1"),
        sa.Column("runner_id", BigId, nullable=True, comment="the runner that held the lease"),
        sa.Column("outcome", _enum(ATTEMPT_OUTCOMES, "attempt_outcome"), nullable=False),
        sa.Column(
            "reason", sa.Text(), server_default="", nullable=False, comment="why it ended without a result"
        ),
        sa.Column(
            "started_at",
            UTCDateTime(timezone=True),
            nullable=True,
            comment="when the lease was handed out, UTC (unknown for older attempts)",
        ),
        sa.Column("ended_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_attempts_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"], ["runners.id"], name=op.f("fk_job_attempts_runner_id_runners"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_attempts")),
        sa.UniqueConstraint("job_id", "number", name=op.f("uq_job_attempts_job_id_number")),
    )
    with op.batch_alter_table("job_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_job_attempts_runner", ["runner_id", "ended_at"], unique=False)
    _attempts_to_rows(connection)
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("attempt_history")


def downgrade() -> None:
    connection = op.get_bind()
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attempt_history", JSONType, nullable=True))
    _rows_to_attempts(connection)
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.alter_column("attempt_history", existing_type=JSONType, nullable=False)
    with op.batch_alter_table("job_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_job_attempts_runner")
    op.drop_table("job_attempts")

    # SQLite rebuilds a table from its reflected constraints: each CHECK goes before its column's type.
    with op.batch_alter_table("github_outbox", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_github_outbox_outbox_kind"), type_="check")
        batch_op.alter_column(
            "kind",
            existing_type=sa.String(length=16),
            type_=sa.String(length=32),
            existing_nullable=False,
            comment="comment, reaction, status",
            existing_comment="comment, reply, reaction, status",
        )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_alerts_alert_confirmation"), type_="check")
        batch_op.drop_constraint(batch_op.f("ck_alerts_bisection_state"), type_="check")
        batch_op.alter_column(
            "confirmation",
            existing_type=sa.String(length=16),
            existing_nullable=False,
            existing_server_default="not_needed",
            comment=OLD_CONFIRMATION_COMMENT,
            existing_comment=CONFIRMATION_COMMENT,
        )
        batch_op.alter_column(
            "bisection_state",
            existing_type=sa.String(length=16),
            existing_nullable=True,
            comment=OLD_BISECTION_COMMENT,
            existing_comment=BISECTION_COMMENT,
        )
        batch_op.add_column(sa.Column("confirmed", sa.Boolean(), nullable=True))
    connection.execute(sa.update(alerts).values(confirmed=alerts.c.confirmation.in_(ESTABLISHED)))
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.alter_column("confirmed", existing_type=sa.Boolean(), nullable=False)


def _refuse_unknown(connection: sa.Connection, column: sa.ColumnClause[Any], values: Sequence[str]) -> None:
    """Stop when a column holds a value its enum does not know (NULL is no value)."""
    unknown = connection.execute(
        sa.select(column, sa.func.count()).where(column.not_in(values)).group_by(column)
    ).all()
    if unknown:
        found = ", ".join(f"{value!r} ({count} rows)" for value, count in unknown)
        raise RuntimeError(
            f"{column} holds values outside {', '.join(values)}: {found}; "
            "correct those rows, then upgrade again"
        )


def _attempts_to_rows(connection: sa.Connection) -> None:
    """Move every job's JSON attempt list into ``job_attempts``, a chunk of jobs at a time."""
    runner_ids = {
        name: runner_id for runner_id, name in connection.execute(sa.select(runners.c.id, runners.c.name))
    }
    last_id = 0
    while True:
        chunk = connection.execute(
            sa.select(jobs.c.id, jobs.c.attempt_history, jobs.c.finished_at, jobs.c.created_at)
            .where(jobs.c.id > last_id)
            .order_by(jobs.c.id)
            .limit(CHUNK)
        ).all()
        if not chunk:
            return
        rows = [
            _attempt_row(job_id, entry, runner_ids, fallback=finished_at or created_at)
            for job_id, history, finished_at, created_at in chunk
            for entry in history or []
        ]
        if rows:
            connection.execute(sa.insert(job_attempts), rows)
        last_id = chunk[-1].id


def _attempt_row(
    job_id: int, entry: dict[str, Any], runner_ids: dict[str, int], *, fallback: dt.datetime
) -> dict[str, Any]:
    outcome = entry.get("outcome")
    if outcome not in ATTEMPT_OUTCOMES:
        raise RuntimeError(
            f"job {job_id}: attempt outcome {outcome!r} is none of {', '.join(ATTEMPT_OUTCOMES)}; "
            "correct its attempt_history, then upgrade again"
        )
    return {
        "job_id": job_id,
        "number": int(entry["attempt"]),
        "runner_id": runner_ids.get(entry.get("runner") or ""),
        "outcome": outcome,
        "reason": str(entry.get("reason") or ""),
        "started_at": None,
        "ended_at": _parse_time(entry.get("at")) or fallback,
    }


def _parse_time(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _rows_to_attempts(connection: sa.Connection) -> None:
    """Write each job's attempts back as the JSON list the jobs kept before this revision."""
    connection.execute(sa.update(jobs).values(attempt_history=sa.literal([], JSONType)))
    histories: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for job_id, number, runner, outcome, reason, ended_at in connection.execute(
        sa.select(
            job_attempts.c.job_id,
            job_attempts.c.number,
            runners.c.name,
            job_attempts.c.outcome,
            job_attempts.c.reason,
            job_attempts.c.ended_at,
        )
        .select_from(job_attempts.outerjoin(runners, runners.c.id == job_attempts.c.runner_id))
        .order_by(job_attempts.c.job_id, job_attempts.c.number)
    ):
        histories[job_id].append(
            {
                "attempt": number,
                "runner": runner,
                "outcome": outcome,
                "reason": reason,
                "at": ended_at.isoformat(),
            }
        )
    statement = (
        sa.update(jobs)
        .where(jobs.c.id == sa.bindparam("job_id"))
        .values(attempt_history=sa.bindparam("history", type_=JSONType))
    )
    items = [{"job_id": job_id, "history": history} for job_id, history in histories.items()]
    for start in range(0, len(items), CHUNK):
        connection.execute(statement, items[start : start + CHUNK])
