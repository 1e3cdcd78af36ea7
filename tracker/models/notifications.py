"""Outgoing webhooks: the subscriptions and the outbox of their deliveries (see
:mod:`tracker.notifications`)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column

from tracker.enums import NotificationEvent, NotificationFormat, NotificationSubject
from tracker.models.base import Base, BigId, UTCDateTime, created_at, int_pk, json_dict, json_list, str_enum


class NotificationSubscription(Base):
    """A receiver of outgoing webhooks: where, in which format, signed with what, for which events,
    limited to which models, hardware kinds and repositories (an empty list: all)."""

    __tablename__ = "notification_subscriptions"

    id: Mapped[int_pk]
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False, comment="where deliveries are POSTed")
    format: Mapped[NotificationFormat] = mapped_column(
        str_enum(NotificationFormat, "notification_format"),
        nullable=False,
        comment="slack: incoming-webhook JSON; json: generic body signed with the secret",
    )
    secret: Mapped[str | None] = mapped_column(String(255), comment="HMAC-SHA256 key; never shown")
    events: Mapped[json_list] = mapped_column(comment="event kinds it receives")
    models: Mapped[json_list] = mapped_column(comment="model slugs; empty: all")
    hardware: Mapped[json_list] = mapped_column(comment="hardware kinds; empty: all")
    repositories: Mapped[json_list] = mapped_column(comment="owner/name; empty: all")
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True, server_default=true())
    created_at: Mapped[created_at]


class NotificationOutbox(Base):
    """One delivery of one event to one subscription: written in the transaction of the event,
    sent after commit with retries; a dead letter once ``dead_at`` is set."""

    __tablename__ = "notification_outbox"
    __table_args__ = (
        Index("ix_notification_outbox_due", "done_at", "dead_at", "next_attempt_at"),
        UniqueConstraint("subscription_id", "dedupe"),
    )

    id: Mapped[int_pk]
    subscription_id: Mapped[int] = mapped_column(
        ForeignKey("notification_subscriptions.id", ondelete="CASCADE"), index=True, nullable=False
    )
    event: Mapped[NotificationEvent] = mapped_column(
        str_enum(NotificationEvent, "notification_event"), nullable=False
    )
    subject_kind: Mapped[NotificationSubject] = mapped_column(
        str_enum(NotificationSubject, "notification_subject"), nullable=False
    )
    subject_id: Mapped[int | None] = mapped_column(BigId, comment="the subject's id; NULL for a test")
    dedupe: Mapped[str | None] = mapped_column(String(128), comment="one delivery per key and subscription")
    delivery: Mapped[str] = mapped_column(
        String(36), unique=True, nullable=False, comment="the delivery id header"
    )
    payload: Mapped[json_dict] = mapped_column(comment="the event, rendered when sent")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_status: Mapped[int | None] = mapped_column(Integer, comment="the receiver's last HTTP status")
    last_error: Mapped[str | None] = mapped_column(Text)
    done_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    dead_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), comment="given up: a dead letter")
    created_at: Mapped[created_at]
