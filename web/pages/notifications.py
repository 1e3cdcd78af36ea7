"""``/notifications``: the admin page of outgoing webhooks: subscriptions (create, delete, send a
test) and the dead letters (retry). Signed-in admins only; every form carries the CSRF token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracker.errors import Conflict, InvalidInput, NotFound
from tracker.models import NotificationOutbox
from tracker.notifications import outbox
from tracker.notifications.subscriptions import (
    SUBSCRIBABLE,
    NewSubscription,
    create_subscription,
    delete_subscription,
    list_subscriptions,
    masked_secret,
    masked_url,
)
from web.api.notifications import NotificationClientDep, RowId
from web.deps import DashboardAdminDep, SessionDep, SettingsDep, WebSessionDep, WriteSessionDep
from web.pages.templating import templates

router = APIRouter()
PAGE = "/notifications"
_Text = Annotated[str, Form(max_length=4000)]


@router.get(PAGE, response_class=HTMLResponse)
def notifications_page(request: Request, session: SessionDep, web: WebSessionDep) -> Response:
    """Subscriptions and dead letters; sign in as an admin first."""
    if web.account is None:
        return RedirectResponse(f"/login?next={PAGE}", status_code=303)
    rows = [
        (subscription, masked_url(subscription.url), masked_secret(subscription.secret))
        for subscription in list_subscriptions(session=session)
    ]
    return templates.TemplateResponse(
        request,
        "notifications.html",
        {
            "title": "Notifications",
            "subscriptions": rows,
            "dead": outbox.dead_letters(session=session),
            "events": [event.value for event in SUBSCRIBABLE],
            "flash": web.pop_flash(),
        },
    )


@router.post(f"{PAGE}/subscriptions")
def create(
    _account: DashboardAdminDep,
    session: WriteSessionDep,
    web: WebSessionDep,
    name: Annotated[str, Form(max_length=128)],
    url: Annotated[str, Form(max_length=2048)],
    format: Annotated[str, Form(max_length=16)] = "json",
    secret: Annotated[str, Form(max_length=255)] = "",
    events: Annotated[list[str] | None, Form(max_length=20)] = None,
    models: _Text = "",
    hardware: _Text = "",
    repositories: _Text = "",
) -> Response:
    """Add a subscription from the form; the filters are comma-separated."""
    new = NewSubscription(
        name=name,
        url=url,
        format=format,
        secret=secret,
        events=list(events or []),
        models=_split(models),
        hardware=_split(hardware),
        repositories=_split(repositories),
    )
    try:
        created = create_subscription(session=session, new=new)
    except (Conflict, InvalidInput) as refused:
        session.rollback()
        web.flash("error", f"Not added: {refused}")
    else:
        session.commit()
        web.flash("ok", f"Subscription {created.name} added.")
    return RedirectResponse(PAGE, status_code=303)


@router.post(f"{PAGE}/subscriptions/{{subscription_id}}/delete")
def delete(
    subscription_id: RowId, _account: DashboardAdminDep, session: WriteSessionDep, web: WebSessionDep
) -> Response:
    """Delete a subscription and its deliveries."""
    try:
        delete_subscription(session=session, subscription_id=subscription_id)
    except NotFound as missing:
        web.flash("error", str(missing))
    else:
        session.commit()
        web.flash("ok", f"Subscription {subscription_id} deleted.")
    return RedirectResponse(PAGE, status_code=303)


@router.post(f"{PAGE}/subscriptions/{{subscription_id}}/test")
def send_test(
    subscription_id: RowId,
    _account: DashboardAdminDep,
    session: WriteSessionDep,
    web: WebSessionDep,
    settings: SettingsDep,
    client: NotificationClientDep,
) -> Response:
    """Send a test event now and say how the receiver answered."""
    try:
        row_id = outbox.queue_test(session=session, subscription_id=subscription_id).id
    except NotFound as missing:
        web.flash("error", str(missing))
        return RedirectResponse(PAGE, status_code=303)
    session.commit()
    _send_and_tell(session, web, row_id, client, settings.public_url, what="Test")
    return RedirectResponse(PAGE, status_code=303)


@router.post(f"{PAGE}/deliveries/{{delivery_id}}/retry")
def retry(
    delivery_id: RowId,
    _account: DashboardAdminDep,
    session: WriteSessionDep,
    web: WebSessionDep,
    settings: SettingsDep,
    client: NotificationClientDep,
) -> Response:
    """Try a dead letter again now."""
    try:
        outbox.revive(session=session, row_id=delivery_id)
    except (NotFound, Conflict) as refused:
        web.flash("error", f"Not retried: {refused}")
        return RedirectResponse(PAGE, status_code=303)
    session.commit()
    _send_and_tell(session, web, delivery_id, client, settings.public_url, what="Retry")
    return RedirectResponse(PAGE, status_code=303)


def _send_and_tell(
    session: WriteSessionDep,
    web: WebSessionDep,
    row_id: int,
    client: NotificationClientDep,
    public_url: str | None,
    *,
    what: str,
) -> None:
    outcome = outbox.send_one(session=session, row_id=row_id, client=client, public_url=public_url)
    if outcome == "sent":
        web.flash("ok", f"{what} delivered.")
        return
    row = session.get(NotificationOutbox, row_id)
    error = row.last_error if row is not None else None
    later = "it is a dead letter now" if outcome == "dead" else "it will be retried"
    web.flash("error", f"{what} not delivered ({error or 'not due'}); {later}.")


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]
