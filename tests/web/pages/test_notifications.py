"""``/notifications``: the admin page of outgoing webhooks. Signed-in admins only; every form needs
the CSRF token; names are escaped; a test and a dead letter's retry reach a local receiver."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.notifications.receiver import Receiver
from tests.web.pages.test_alerts import _csrf
from tracker.models import NotificationOutbox
from tracker.notifications import outbox
from web.api.notifications import notification_client

HOSTILE = '<script>window.pwned=1</script> & "team"'
URL = "https://hooks.example.org/services/T0/B0/path-token"


@pytest.fixture
def signed_in(client: TestClient, admin_token: str) -> TestClient:
    csrf = _csrf(client.get("/login").text)
    response = client.post("/login", data={"token": admin_token, "csrf_token": csrf}, follow_redirects=False)
    assert response.status_code == 303
    return client


@pytest.fixture
def receiver(client: TestClient) -> Iterator[Receiver]:
    local = Receiver()
    client.app.dependency_overrides[notification_client] = local.client  # type: ignore[attr-defined]
    yield local
    client.app.dependency_overrides.pop(notification_client, None)  # type: ignore[attr-defined]


def flash(html: str) -> str:
    match = re.search(r'id="flash">([^<]*)<', html)
    assert match, "no flash message"
    return match.group(1)


def add(client: TestClient, name: str = HOSTILE) -> str:
    """Add a subscription through the form; the page after the redirect."""
    csrf = _csrf(client.get("/notifications").text)
    response = client.post(
        "/notifications/subscriptions",
        data={
            "name": name,
            "url": URL,
            "format": "slack",
            "events": ["group.confirmed", "group.fixed"],
            "models": "flux-t2i, wan-t2v",
            "csrf_token": csrf,
        },
    )
    assert response.status_code == 200
    return str(response.text)


def subscription_id(html: str) -> int:
    match = re.search(r'data-subscription="(\d+)"', html)
    assert match
    return int(match.group(1))


def test_the_page_asks_to_sign_in_first(client: TestClient) -> None:
    response = client.get("/notifications", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=/notifications"


def test_a_form_without_the_csrf_token_is_refused(signed_in: TestClient) -> None:
    response = signed_in.post("/notifications/subscriptions", data={"name": "x", "url": URL})
    assert response.status_code == 403
    assert "data-subscription" not in signed_in.get("/notifications").text


def test_an_admin_adds_a_subscription_shown_escaped_and_masked(signed_in: TestClient) -> None:
    html = add(signed_in)
    assert "Subscription &lt;script&gt;" in flash(html)
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt; &amp; &#34;team&#34;" in html
    assert "https://hooks.example.org/…" in html
    assert "path-token" not in html
    assert "models: flux-t2i, wan-t2v" in html
    assert "group.confirmed, group.fixed" in html


def test_a_refused_subscription_says_why(signed_in: TestClient) -> None:
    csrf = _csrf(signed_in.get("/notifications").text)
    response = signed_in.post(
        "/notifications/subscriptions", data={"name": "x", "url": "file:///etc/passwd", "csrf_token": csrf}
    )
    assert flash(response.text).startswith("Not added: url: give an http:// or https:// URL")


def test_send_a_test_then_delete(signed_in: TestClient, receiver: Receiver) -> None:
    html = add(signed_in, "team")
    number = subscription_id(html)
    csrf = _csrf(html)
    tested = signed_in.post(f"/notifications/subscriptions/{number}/test", data={"csrf_token": csrf})
    assert flash(tested.text) == "Test delivered."
    [request] = receiver.got
    assert request.headers["X-Perftrack-Event"] == "test"
    assert set(receiver.bodies()[0]) == {"text", "blocks"}  # the Slack format
    receiver.answers = [500]
    failed = signed_in.post(f"/notifications/subscriptions/{number}/test", data={"csrf_token": csrf})
    assert flash(failed.text) == "Test not delivered (HTTP 500: nope); it will be retried."
    deleted = signed_in.post(f"/notifications/subscriptions/{number}/delete", data={"csrf_token": csrf})
    assert flash(deleted.text) == f"Subscription {number} deleted."
    assert "data-subscription" not in deleted.text


def test_a_dead_letter_is_listed_and_retried(
    signed_in: TestClient, receiver: Receiver, session: Session
) -> None:
    number = subscription_id(add(signed_in, "team"))
    row = outbox.queue_test(session=session, subscription_id=number)
    row.dead_at = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    row.attempts = outbox.DEAD_AFTER
    row.last_error = "HTTP 410: <gone>"
    session.commit()
    html = signed_in.get("/notifications").text
    assert f'data-delivery="{row.id}"' in html
    assert "HTTP 410: &lt;gone&gt;" in html
    retried = signed_in.post(f"/notifications/deliveries/{row.id}/retry", data={"csrf_token": _csrf(html)})
    assert flash(retried.text) == "Retry delivered."
    assert f'data-delivery="{row.id}"' not in retried.text
    session.expire_all()
    assert session.scalars(select(NotificationOutbox.done_at)).one() is not None
