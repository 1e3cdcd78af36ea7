"""``/api/v1/notifications``: admins only; a subscription's URL and secret never come back in full;
a test is sent at once to a local receiver; dead letters are listed and retried."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.tracker.notifications.receiver import Receiver, signed_by
from web.api.notifications import notification_client

SECRET = "a-receiver-secret-of-some-length"
URL = "https://hooks.example.org/services/T0/B0/path-token"


@pytest.fixture
def receiver(client: TestClient) -> Iterator[Receiver]:
    """The receiver every delivery the API sends at once reaches."""
    local = Receiver()
    app = client.app
    app.dependency_overrides[notification_client] = local.client  # type: ignore[attr-defined]
    yield local
    app.dependency_overrides.pop(notification_client, None)  # type: ignore[attr-defined]


def admin(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def create(client: TestClient, token: str, **body: object) -> dict[str, object]:
    fields = {"name": "team", "url": URL, "secret": SECRET, **body}
    response = client.post("/api/v1/notifications/subscriptions", json=fields, headers=admin(token))
    assert response.status_code == 201, response.text
    created: dict[str, object] = response.json()
    return created


def test_only_admins_see_or_change_subscriptions(client: TestClient, runner_token: str) -> None:
    assert client.get("/api/v1/notifications/subscriptions").status_code == 401
    assert client.get("/api/v1/notifications/subscriptions", headers=admin(runner_token)).status_code == 403
    refused = client.post(
        "/api/v1/notifications/subscriptions", json={"name": "x", "url": URL}, headers=admin(runner_token)
    )
    assert refused.status_code == 403
    assert client.get("/api/v1/notifications/dead-letters").status_code == 401


def test_a_subscription_shows_its_url_masked_and_never_its_secret(
    client: TestClient, admin_token: str
) -> None:
    created = create(client, admin_token, models=["flux-t2i"], events=["alert.confirmed", "pr.verdict"])
    assert created["events"] == ["group.confirmed", "pr.verdict"]  # the name before 0028, mapped
    assert created["url"] == "https://hooks.example.org/…"
    assert created["secret"] == "set"
    assert created["models"] == ["flux-t2i"]
    listed = client.get("/api/v1/notifications/subscriptions", headers=admin(admin_token))
    assert listed.status_code == 200
    assert SECRET not in listed.text
    assert "path-token" not in listed.text
    assert [item["name"] for item in listed.json()] == ["team"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "javascript:alert(1)"}, "url"),
        ({"url": "https://hooks.example.org:99999/x"}, "url"),
        ({"url": "http://[::1/x"}, "url"),
        ({"events": ["alert.exploded"]}, "events"),
        ({"secret": "short"}, "secret"),
        ({"format": "xml"}, "format"),
    ],
)
def test_a_bad_subscription_is_a_422_naming_the_field(
    client: TestClient, admin_token: str, body: dict[str, object], field: str
) -> None:
    fields = {"name": "team", "url": URL, **body}
    response = client.post("/api/v1/notifications/subscriptions", json=fields, headers=admin(admin_token))
    assert response.status_code == 422
    assert field in response.text
    assert client.get("/api/v1/notifications/subscriptions", headers=admin(admin_token)).json() == []


def test_a_taken_name_is_a_409(client: TestClient, admin_token: str) -> None:
    create(client, admin_token)
    response = client.post(
        "/api/v1/notifications/subscriptions", json={"name": "team", "url": URL}, headers=admin(admin_token)
    )
    assert response.status_code == 409


def test_send_a_test_reaches_the_receiver_signed(
    client: TestClient, admin_token: str, receiver: Receiver
) -> None:
    created = create(client, admin_token)
    response = client.post(
        f"/api/v1/notifications/subscriptions/{created['id']}/test", headers=admin(admin_token)
    )
    assert response.status_code == 200, response.text
    assert response.json()["state"] == "sent"
    [request] = receiver.got
    assert str(request.url) == URL
    assert request.headers["X-Perftrack-Event"] == "test"
    assert signed_by(request, SECRET)
    assert (
        client.post("/api/v1/notifications/subscriptions/999/test", headers=admin(admin_token)).status_code
        == 404
    )


def test_a_failed_test_stays_queued_and_a_dead_letter_is_retried(
    client: TestClient, admin_token: str, receiver: Receiver
) -> None:
    created = create(client, admin_token)
    receiver.answers = [503]
    tried = client.post(
        f"/api/v1/notifications/subscriptions/{created['id']}/test", headers=admin(admin_token)
    )
    assert tried.json()["state"] == "pending"
    assert tried.json()["last_status"] == 503
    assert client.get("/api/v1/notifications/dead-letters", headers=admin(admin_token)).json() == []
    retried = client.post(
        f"/api/v1/notifications/deliveries/{tried.json()['id']}/retry", headers=admin(admin_token)
    )
    assert retried.status_code == 200
    assert retried.json()["state"] == "sent"
    again = client.post(
        f"/api/v1/notifications/deliveries/{tried.json()['id']}/retry", headers=admin(admin_token)
    )
    assert again.status_code == 409


def test_deleting_a_subscription(client: TestClient, admin_token: str) -> None:
    created = create(client, admin_token)
    path = f"/api/v1/notifications/subscriptions/{created['id']}"
    assert client.delete(path, headers=admin(admin_token)).status_code == 204
    assert client.delete(path, headers=admin(admin_token)).status_code == 404
