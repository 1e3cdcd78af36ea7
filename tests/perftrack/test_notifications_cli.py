"""``perftrack notifications``: a subscription added, listed masked, refused with a clear message,
deleted; a dead letter listed and revived."""

from __future__ import annotations

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from tests.perftrack.test_cli import cli_env, invoke
from tracker.models import NotificationOutbox, NotificationSubscription, utcnow
from tracker.notifications import outbox

__all__ = ["cli_env"]

URL = "https://hooks.example.org/services/T0/B0/path-token"


def _engine(url: str):  # type: ignore[no-untyped-def]
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def test_add_list_refuse_and_delete(cli_env: str) -> None:
    assert invoke("notifications", "list")[1].strip() == "no subscription"
    code, output = invoke(
        "notifications",
        "add",
        "team",
        URL,
        "--format",
        "slack",
        "--event",
        "group.fixed",
        "--model",
        "flux-t2i",
    )
    assert code == 0, output
    assert "subscription 1 (team) added" in output
    code, output = invoke("notifications", "list")
    assert "https://hooks.example.org/…" in output
    assert "path-token" not in output
    assert "group.fixed" in output
    code, output = invoke("notifications", "add", "other", "ftp://example.org")
    assert code != 0
    assert "url: give an http:// or https:// URL" in output
    assert invoke("notifications", "delete", "1")[0] == 0
    assert invoke("notifications", "list")[1].strip() == "no subscription"


def test_a_dead_letter_is_listed_and_revived(cli_env: str) -> None:
    invoke("notifications", "add", "team", URL)
    engine = _engine(cli_env)
    with Session(engine) as session:
        subscription = session.scalars(select(NotificationSubscription)).one()
        row = outbox.queue_test(session=session, subscription_id=subscription.id)
        row.dead_at = utcnow()
        row.last_error = "HTTP 410: gone"
        session.commit()
        row_id = row.id
    assert "HTTP 410: gone" in invoke("notifications", "dead")[1]
    code, output = invoke("notifications", "retry", str(row_id))
    assert code == 0, output
    with Session(engine) as session:
        revived = session.get(NotificationOutbox, row_id)
        assert revived is not None
        assert revived.dead_at is None
    assert invoke("notifications", "dead")[1].strip() == "no dead letters"
    engine.dispose()
