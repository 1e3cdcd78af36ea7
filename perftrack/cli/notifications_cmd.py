"""``perftrack notifications``: outgoing webhook subscriptions (list, add, delete, test) and their
outbox (flush, dead letters, retry). See docs/notifications.md."""

from __future__ import annotations

import typer

from perftrack.cli.common import console, database_session, fail, settings
from tracker.errors import PerftrackError
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

app = typer.Typer(
    help="Outgoing webhooks: subscriptions (list, add, delete, test) and the outbox (flush, dead, retry).",
    no_args_is_help=True,
)
_EVENTS = ", ".join(event.value for event in SUBSCRIBABLE)


@app.command("list")
def list_all() -> None:
    """List the subscriptions (URLs masked, secrets never shown)."""
    with database_session() as session:
        rows = list_subscriptions(session=session)
        if not rows:
            console.print("no subscription")
            return
        for row in rows:  # one line each: URLs and lists do not fit a table's columns
            filters = [
                f"{label} {', '.join(values)}"
                for label, values in (
                    ("models", row.models),
                    ("hardware", row.hardware),
                    ("repositories", row.repositories),
                )
                if values
            ]
            console.print(
                f"#{row.id} {row.name}: {masked_url(row.url)} {row.format.value}"
                f"{', signed' if masked_secret(row.secret) else ''}; {', '.join(row.events)}"
                f"{'; ' + '; '.join(filters) if filters else ''}",
                highlight=False,
                soft_wrap=True,
            )


@app.command("add")
def add(
    name: str = typer.Argument(..., help="A name of your choice."),
    url: str = typer.Argument(..., help="The receiver's http(s) URL."),
    format: str = typer.Option("json", "--format", help="json (signed generic JSON) or slack."),
    secret: str = typer.Option(
        "", "--secret", envvar="PERFTRACK_NOTIFY_SECRET", help="Signs the json format (16+ characters)."
    ),
    events: list[str] = typer.Option([], "--event", help=f"Repeat; default all: {_EVENTS}."),
    models: list[str] = typer.Option([], "--model", help="Repeat; a case, model or model family."),
    hardware: list[str] = typer.Option([], "--hardware", help="Repeat; a hardware kind."),
    repositories: list[str] = typer.Option([], "--repository", help="Repeat; owner/name."),
) -> None:
    """Subscribe a URL to events (all unless --event), limited by the filters given."""
    new = NewSubscription(
        name=name,
        url=url,
        format=format,
        secret=secret or None,
        events=events or [event.value for event in SUBSCRIBABLE],
        models=models,
        hardware=hardware,
        repositories=repositories,
    )
    with database_session() as session:
        created = create_subscription(session=session, new=new)
        console.print(f"subscription {created.id} ({created.name}) added")


@app.command("delete")
def delete(subscription_id: int = typer.Argument(..., help="See `perftrack notifications list`.")) -> None:
    """Delete a subscription and its deliveries."""
    with database_session() as session:
        delete_subscription(session=session, subscription_id=subscription_id)
        console.print(f"subscription {subscription_id} deleted")


@app.command("test")
def send_test(subscription_id: int = typer.Argument(..., help="See `perftrack notifications list`.")) -> None:
    """Send a test event to a subscription now."""
    public_url = settings().public_url
    with database_session() as session, outbox.default_client() as client:
        row = outbox.queue_test(session=session, subscription_id=subscription_id)
        session.commit()
        outcome = outbox.send_one(session=session, row_id=row.id, client=client, public_url=public_url)
        if outcome != "sent":
            fail(f"the receiver did not take the test ({row.last_error}); it will be retried")
        console.print(f"test delivered ({row.delivery})")


@app.command("flush")
def flush() -> None:
    """Send what is due now (the scheduler does this every 10 seconds)."""
    public_url = settings().public_url
    with database_session() as session:
        report = outbox.flush_notifications(session=session, public_url=public_url)
    console.print(f"sent {report.sent}, failed {report.failed} (retried later), given up {report.dead}")


@app.command("dead")
def dead() -> None:
    """List the dead letters: deliveries given up after their last retry."""
    with database_session() as session:
        rows = outbox.dead_letters(session=session)
        if not rows:
            console.print("no dead letters")
            return
        for row in rows:
            console.print(
                f"#{row.id} {row.event.value} {row.subject_kind.value} {row.subject_id or ''} "
                f"to subscription {row.subscription_id}, {row.attempts} tries: {row.last_error}",
                highlight=False,
                soft_wrap=True,
            )


@app.command("retry")
def retry(
    row_id: int = typer.Argument(..., help="A dead letter (see `perftrack notifications dead`)."),
) -> None:
    """Try a dead letter again at the next flush."""
    with database_session() as session:
        try:
            outbox.revive(session=session, row_id=row_id)
        except PerftrackError as error:
            fail(str(error))
        console.print(f"delivery {row_id} will be retried")
