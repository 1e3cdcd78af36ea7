"""The receivers of outgoing webhooks: created, listed and deleted by an admin.

A subscription names its URL, its format (:class:`~tracker.enums.NotificationFormat`), the secret
that signs a generic JSON body, the events it wants, and the models (case slug, model or model
family), hardware kinds and repositories (``owner/name``) it is limited to: an empty filter lets
everything through. The secret and the URL (a Slack URL is itself a credential) are stored to send
and sign, and shown back only masked (:func:`masked_url`, :func:`masked_secret`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tracker.enums import NotificationEvent, NotificationFormat, enum_values
from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import NotificationOutbox, NotificationSubscription

# Events a subscription may ask for ("test" is sent on demand to any subscription).
SUBSCRIBABLE = tuple(event for event in NotificationEvent if event is not NotificationEvent.TEST)
# The names the alert events had before they became group events (migration 0028 maps what was
# stored): still taken when a subscription is created, and stored under the new name.
RENAMED = {
    "alert.confirmed": NotificationEvent.GROUP_CONFIRMED,
    "alert.culprit": NotificationEvent.GROUP_CULPRIT,
    "alert.fixed": NotificationEvent.GROUP_FIXED,
}
MAX_FILTER_ITEMS = 100
_MAX_ITEM_CHARS = 255


@dataclass(frozen=True)
class NewSubscription:
    """What an admin asks for; checked by :func:`create_subscription`."""

    name: str
    url: str
    format: str = NotificationFormat.JSON.value
    secret: str | None = None
    events: list[str] = field(default_factory=lambda: [event.value for event in SUBSCRIBABLE])
    models: list[str] = field(default_factory=list)
    hardware: list[str] = field(default_factory=list)
    repositories: list[str] = field(default_factory=list)


def create_subscription(*, session: Session, new: NewSubscription) -> NotificationSubscription:
    """Store a subscription; :class:`InvalidInput` names what is wrong, :class:`Conflict` a taken name."""
    name = new.name.strip()
    if not name or len(name) > 128:
        raise InvalidInput("name", "give a name of 1 to 128 characters")
    if session.scalar(select(NotificationSubscription.id).where(NotificationSubscription.name == name)):
        raise Conflict(f"a subscription named {name!r} exists already")
    subscription = NotificationSubscription(
        name=name,
        url=_checked_url(new.url),
        format=_checked_format(new.format),
        secret=_checked_secret(new.secret),
        events=_checked_events(new.events),
        models=_checked_list("models", new.models),
        hardware=_checked_list("hardware", new.hardware),
        repositories=_checked_list("repositories", new.repositories),
        enabled=True,
    )
    session.add(subscription)
    session.flush()
    return subscription


def list_subscriptions(*, session: Session) -> list[NotificationSubscription]:
    """Every subscription, by name."""
    return list(session.scalars(select(NotificationSubscription).order_by(NotificationSubscription.name)))


def get_subscription(*, session: Session, subscription_id: int) -> NotificationSubscription:
    """One subscription, or :class:`NotFound`."""
    subscription = session.get(NotificationSubscription, subscription_id)
    if subscription is None:
        raise NotFound(f"no notification subscription {subscription_id}")
    return subscription


def delete_subscription(*, session: Session, subscription_id: int) -> None:
    """Delete a subscription and its deliveries, sent, pending and dead."""
    subscription = get_subscription(session=session, subscription_id=subscription_id)
    session.execute(delete(NotificationOutbox).where(NotificationOutbox.subscription_id == subscription.id))
    session.delete(subscription)
    session.flush()


def masked_url(url: str) -> str:
    """The URL as shown back: scheme and host only (a webhook URL's path is often its credential)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}/…"


def masked_secret(secret: str | None) -> str | None:
    """Whether a secret is set, never its value."""
    return None if not secret else "set"


def _checked_url(url: str) -> str:
    url = url.strip()
    try:
        parts = urlsplit(url)
        valid = parts.scheme in {"http", "https"} and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:  # a bad port or IPv6 address
        valid = False
    if not valid or any(character.isspace() for character in url):
        raise InvalidInput("url", "give an http:// or https:// URL with a host")
    if len(url) > 2048:
        raise InvalidInput("url", "at most 2048 characters")
    return url


def _checked_format(value: str) -> NotificationFormat:
    try:
        return NotificationFormat(value)
    except ValueError:
        raise InvalidInput(
            "format", f"{value!r} is none of {', '.join(enum_values(NotificationFormat))}"
        ) from None


def _checked_secret(secret: str | None) -> str | None:
    secret = (secret or "").strip() or None
    if secret is not None and not 16 <= len(secret) <= 255:
        raise InvalidInput("secret", "give 16 to 255 characters (or none)")
    return secret


def _checked_events(events: Iterable[str]) -> list[str]:
    """The events asked for, an old name (:data:`RENAMED`) as the group event it became."""
    named = (RENAMED[event.strip()].value if event.strip() in RENAMED else event for event in events)
    wanted = _checked_list("events", named)
    if not wanted:
        raise InvalidInput("events", "name at least one event")
    known = {event.value for event in SUBSCRIBABLE}
    unknown = [event for event in wanted if event not in known]
    if unknown:
        raise InvalidInput("events", f"{', '.join(unknown)} unknown; known: {', '.join(sorted(known))}")
    return wanted


def _checked_list(name: str, values: Iterable[str]) -> list[str]:
    items = list(dict.fromkeys(value.strip() for value in values if value.strip()))
    if len(items) > MAX_FILTER_ITEMS:
        raise InvalidInput(name, f"at most {MAX_FILTER_ITEMS} items")
    if any(len(item) > _MAX_ITEM_CHARS for item in items):
        raise InvalidInput(name, f"each item at most {_MAX_ITEM_CHARS} characters")
    return items
