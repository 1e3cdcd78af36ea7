"""Outgoing webhooks, for admins: subscriptions (list, create, delete, send a test) and the dead
letters (list, retry). See docs/notifications.md."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, Path, Response

from tracker.models import NotificationOutbox
from tracker.notifications import outbox
from tracker.notifications.subscriptions import create_subscription, delete_subscription, list_subscriptions
from web.deps import AdminTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.schemas.errors import ADMIN, BODY, errors
from web.schemas.notifications import DeliveryOut, SubscriptionIn, SubscriptionOut
from web.schemas.params import MAX_ID

router = APIRouter(prefix="/notifications", tags=["notifications"])
RowId = Annotated[int, Path(ge=1, le=MAX_ID, description="a subscription's or a delivery's id")]


def notification_client() -> Iterator[httpx.Client]:
    """The HTTP client a test or a retry is sent with at once (closed after the request)."""
    with outbox.default_client() as client:
        yield client


NotificationClientDep = Annotated[httpx.Client, Depends(notification_client)]


@router.get("/subscriptions", response_model=list[SubscriptionOut], responses=errors(ADMIN))
def subscriptions(session: SessionDep, _t: AdminTokenDep) -> list[SubscriptionOut]:
    """Every subscription, by name; URLs masked, secrets never shown."""
    return [SubscriptionOut.of(row) for row in list_subscriptions(session=session)]


@router.post(
    "/subscriptions",
    status_code=201,
    response_model=SubscriptionOut,
    responses=errors(ADMIN, BODY, 409, notes={409: "A subscription of that name exists"}),
)
def create(body: SubscriptionIn, session: WriteSessionDep, _t: AdminTokenDep) -> SubscriptionOut:
    """Subscribe a URL to events, optionally limited to models, hardware kinds and repositories."""
    created = create_subscription(session=session, new=body.new())
    session.commit()
    return SubscriptionOut.of(created)


@router.delete("/subscriptions/{subscription_id}", status_code=204, responses=errors(ADMIN, 404, 422))
def delete(subscription_id: RowId, session: WriteSessionDep, _t: AdminTokenDep) -> Response:
    """Delete a subscription and its deliveries."""
    delete_subscription(session=session, subscription_id=subscription_id)
    session.commit()
    return Response(status_code=204)


@router.post(
    "/subscriptions/{subscription_id}/test", response_model=DeliveryOut, responses=errors(ADMIN, 404, 422)
)
def send_test(
    subscription_id: RowId,
    session: WriteSessionDep,
    settings: SettingsDep,
    client: NotificationClientDep,
    _t: AdminTokenDep,
) -> DeliveryOut:
    """Send a test event now; the answer says whether the receiver took it (a failure is retried)."""
    row_id = outbox.queue_test(session=session, subscription_id=subscription_id).id
    session.commit()
    return _sent_now(session, row_id, client, settings.public_url)


@router.get("/dead-letters", response_model=list[DeliveryOut], responses=errors(ADMIN))
def dead_letters(session: SessionDep, _t: AdminTokenDep) -> list[DeliveryOut]:
    """The deliveries given up after their last retry, newest first."""
    return [DeliveryOut.of(row) for row in outbox.dead_letters(session=session)]


@router.post(
    "/deliveries/{delivery_id}/retry",
    response_model=DeliveryOut,
    responses=errors(ADMIN, 404, 409, 422, notes={409: "The delivery was sent already"}),
)
def retry(
    delivery_id: RowId,
    session: WriteSessionDep,
    settings: SettingsDep,
    client: NotificationClientDep,
    _t: AdminTokenDep,
) -> DeliveryOut:
    """Try a dead letter again now, with a fresh count of retries."""
    outbox.revive(session=session, row_id=delivery_id)
    session.commit()
    return _sent_now(session, delivery_id, client, settings.public_url)


def _sent_now(session: SessionDep, row_id: int, client: httpx.Client, public_url: str | None) -> DeliveryOut:
    """Send one delivery with no transaction open while the receiver answers; the row afterwards."""
    outbox.send_one(session=session, row_id=row_id, client=client, public_url=public_url)
    row = session.get(NotificationOutbox, row_id)
    assert row is not None
    return DeliveryOut.of(row)


__all__ = ["notification_client", "router"]
