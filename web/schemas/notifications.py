"""Notification subscriptions and deliveries as the JSON API shows them: a subscription's URL is
shown masked (scheme and host) and its secret only as whether one is set."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from tracker.enums import NotificationFormat
from tracker.models import NotificationOutbox, NotificationSubscription
from tracker.notifications.subscriptions import SUBSCRIBABLE, NewSubscription, masked_secret, masked_url

_ALL_EVENTS = [event.value for event in SUBSCRIBABLE]


class SubscriptionIn(BaseModel):
    """A new subscription."""

    name: str = Field(min_length=1, max_length=128)
    url: str = Field(min_length=1, max_length=2048, description="http(s) URL the deliveries are POSTed to")
    format: NotificationFormat = Field(
        default=NotificationFormat.JSON, description="slack: incoming-webhook JSON; json: signed generic JSON"
    )
    secret: str | None = Field(
        default=None, max_length=255, description="HMAC-SHA256 key of the json format's signature"
    )
    events: list[str] = Field(
        default_factory=lambda: list(_ALL_EVENTS),
        max_length=20,
        description="alert.confirmed, alert.culprit and alert.fixed (the names before 0028) are taken as group.*",
    )
    models: list[str] = Field(default_factory=list, max_length=100, description="case, model or family")
    hardware: list[str] = Field(default_factory=list, max_length=100)
    repositories: list[str] = Field(default_factory=list, max_length=100, description="owner/name")

    def new(self) -> NewSubscription:
        """The tracker's request."""
        return NewSubscription(
            name=self.name,
            url=self.url,
            format=self.format.value,
            secret=self.secret,
            events=self.events,
            models=self.models,
            hardware=self.hardware,
            repositories=self.repositories,
        )


class SubscriptionOut(BaseModel):
    """A subscription, its URL masked and its secret never shown."""

    id: int
    name: str
    url: str = Field(description="scheme and host only: a webhook URL's path is often its credential")
    format: str
    secret: str | None = Field(description='"set" when a secret signs the deliveries')
    events: list[str]
    models: list[str]
    hardware: list[str]
    repositories: list[str]
    enabled: bool
    created_at: dt.datetime

    @classmethod
    def of(cls, subscription: NotificationSubscription) -> SubscriptionOut:
        """From the row."""
        return cls(
            id=subscription.id,
            name=subscription.name,
            url=masked_url(subscription.url),
            format=subscription.format.value,
            secret=masked_secret(subscription.secret),
            events=list(subscription.events),
            models=list(subscription.models),
            hardware=list(subscription.hardware),
            repositories=list(subscription.repositories),
            enabled=subscription.enabled,
            created_at=subscription.created_at,
        )


class DeliveryOut(BaseModel):
    """One delivery of an event to a subscription."""

    id: int
    subscription_id: int
    event: str
    subject_kind: str
    subject_id: int | None
    delivery: str = Field(description="the X-Perftrack-Delivery header")
    title: str
    attempts: int
    state: str = Field(description="sent, pending or dead")
    last_status: int | None = Field(description="the receiver's last HTTP status")
    last_error: str | None
    next_attempt_at: dt.datetime | None
    created_at: dt.datetime

    @classmethod
    def of(cls, row: NotificationOutbox) -> DeliveryOut:
        """From the row."""
        state = "sent" if row.done_at is not None else "dead" if row.dead_at is not None else "pending"
        return cls(
            id=row.id,
            subscription_id=row.subscription_id,
            event=row.event.value,
            subject_kind=row.subject_kind.value,
            subject_id=row.subject_id,
            delivery=row.delivery,
            title=str(row.payload.get("title", "")),
            attempts=row.attempts,
            state=state,
            last_status=row.last_status,
            last_error=row.last_error,
            next_attempt_at=row.next_attempt_at,
            created_at=row.created_at,
        )
