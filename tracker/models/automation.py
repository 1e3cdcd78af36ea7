"""What the GitHub bot and the scheduler keep: webhook deliveries, the GitHub outbox, nightly runs,
and APScheduler's own job table (created by migration, so ``alembic check`` knows it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    Unicode,
)
from sqlalchemy.orm import Mapped, mapped_column

from tracker.enums import DeliveryState, OutboxKind
from tracker.models.base import (
    Base,
    JSONType,
    UTCDateTime,
    created_at,
    int_pk,
    json_dict,
    json_list,
    str_enum,
)

# APScheduler 3's SQLAlchemyJobStore table, declared here with its exact shape: the migration
# creates it, the job store finds it (``create(checkfirst=True)`` does nothing) and alembic check
# sees no drift. The job state is a pickle written and read only by APScheduler.
apscheduler_jobs = Table(
    "apscheduler_jobs",
    Base.metadata,
    Column("id", Unicode(191), primary_key=True),
    Column("next_run_time", Float(25), index=True),
    Column("job_state", LargeBinary, nullable=False),
)


class GithubDelivery(Base):
    """A webhook delivery (``X-GitHub-Delivery``), stored when it arrives and carried out afterwards.

    The webhook answers at once; the bot works through ``pending`` rows (right after the answer,
    and from the scheduler with backoff while GitHub fails), so a GitHub hiccup delays a command
    but never loses it. A redelivery of a ``done`` row does nothing; of a ``failed`` one runs again.
    """

    __tablename__ = "github_deliveries"
    __table_args__ = (Index("ix_github_deliveries_due", "state", "next_attempt_at"),)

    id: Mapped[int_pk]
    delivery_id: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    event: Mapped[str] = mapped_column(String(64), nullable=False)
    action: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    outcome: Mapped[str] = mapped_column(Text, nullable=False, default="", comment="what the bot did")
    state: Mapped[DeliveryState] = mapped_column(
        str_enum(DeliveryState, "delivery_state"),
        nullable=False,
        default=DeliveryState.DONE,
        server_default="done",
    )
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSONType, comment="the event, as the bot reads it")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    handled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    received_at: Mapped[created_at]


class GithubOutbox(Base):
    """A call to GitHub that must happen (comment, comment edit, reaction, commit status).

    Written in the same transaction as the change it reports, sent after commit, retried with
    backoff until it succeeds: a comment that cannot be posted now is posted later, never lost.
    """

    __tablename__ = "github_outbox"
    __table_args__ = (Index("ix_github_outbox_due", "done_at", "next_attempt_at"),)

    id: Mapped[int_pk]
    kind: Mapped[OutboxKind] = mapped_column(
        str_enum(OutboxKind, "outbox_kind"),
        nullable=False,
        comment="comment, reply, reaction, status, check, culprit",
    )
    repository: Mapped[str] = mapped_column(String(255), nullable=False, comment="owner/name")
    target: Mapped[str] = mapped_column(
        String(64), nullable=False, comment="PR number, comment id or commit sha"
    )
    payload: Mapped[json_dict]
    comparison_id: Mapped[int | None] = mapped_column(
        ForeignKey("comparisons.id", ondelete="SET NULL"), index=True
    )
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    done_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    refusals: Mapped[int] = mapped_column(
        Integer, nullable=False, default=0, server_default="0", comment="permanent refusals in a row"
    )
    dead_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="given up: GitHub refused it for good (4xx other than rate limits)"
    )
    created_at: Mapped[created_at]


class NightlyRun(Base):
    """One firing of a nightly schedule: the commit it measured and what it queued."""

    __tablename__ = "nightly_runs"
    __table_args__ = (Index("ix_nightly_runs_schedule", "schedule", "fired_at"),)

    id: Mapped[int_pk]
    schedule: Mapped[str] = mapped_column(String(128), nullable=False)
    fired_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False)
    scheduled_for: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="the fire time it ran for"
    )
    repository_id: Mapped[int | None] = mapped_column(ForeignKey("repositories.id"))
    branch: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    commit_sha: Mapped[str | None] = mapped_column(String(40))
    jobs_queued: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    jobs_existing: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    backfilled: Mapped[json_list] = mapped_column(comment="commit shas queued as backfill")
    error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    reported_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when its summary went to the tracking issue"
    )
    notified_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when its summary was queued to the notification subscriptions"
    )
    created_at: Mapped[created_at]


__all__ = ["GithubDelivery", "GithubOutbox", "NightlyRun", "apscheduler_jobs"]
