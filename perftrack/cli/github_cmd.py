"""``perftrack github``: the deliveries the PR bot received, what it still has to tell GitHub, and
what it gave up on."""

from __future__ import annotations

import typer
from rich.table import Table
from sqlalchemy import select

from perftrack.cli.common import console, database_session, fail, settings
from tracker.enums import DeliveryState
from tracker.errors import PerftrackError
from tracker.github import outbox
from tracker.github.inbox import requeue
from tracker.models import GithubDelivery, GithubOutbox

app = typer.Typer(
    help="The PR bot: its deliveries (and running failed ones again), its outbox (list, flush, retry).",
    no_args_is_help=True,
)


def outbox_table(rows: list[GithubOutbox]) -> Table:
    """Outbox rows as a rich table."""
    table = Table()
    for column in ("id", "kind", "repository", "target", "comparison", "tries", "next try", "state"):
        table.add_column(column, justify="right" if column in ("id", "tries") else "left")
    for row in rows:
        state = "dead" if row.dead_at else "sent" if row.done_at else "waiting"
        table.add_row(
            str(row.id),
            row.kind,
            row.repository,
            row.target,
            str(row.comparison_id or ""),
            str(row.attempts),
            row.next_attempt_at.strftime("%Y-%m-%d %H:%M UTC") if row.next_attempt_at else "",
            state,
            style="red" if row.dead_at else None,
        )
    return table


@app.command("outbox")
def list_outbox(
    dead: bool = typer.Option(False, "--dead", help="Only the rows given up on."),
    limit: int = typer.Option(50, min=1, max=1000, help="At most this many, oldest first."),
) -> None:
    """List the GitHub writes not sent yet (waiting for a retry, or dead)."""
    with database_session() as session:
        query = select(GithubOutbox).where(GithubOutbox.done_at.is_(None)).order_by(GithubOutbox.id)
        if dead:
            query = query.where(GithubOutbox.dead_at.is_not(None))
        rows = list(session.scalars(query.limit(limit)))
        if not rows:
            console.print("the outbox is empty")
            return
        console.print(outbox_table(rows))
        for row in rows:  # errors are long: one line each, under the table
            if row.last_error:
                console.print(f"#{row.id}: {row.last_error}", highlight=False)


@app.command("retry")
def retry(
    row_id: int = typer.Argument(..., help="The outbox row (see `perftrack github outbox --dead`)."),
) -> None:
    """Try a row again at the next flush, dead or not."""
    with database_session() as session:
        try:
            row = outbox.revive(session=session, row_id=row_id)
        except PerftrackError as error:
            fail(str(error))
        console.print(f"outbox row {row.id} ({row.kind} on {row.repository} {row.target}) will be retried")


@app.command("flush")
def flush() -> None:
    """Send what is due now (the scheduler does this every minute)."""
    config = settings()
    with database_session() as session:
        report = outbox.flush_outbox(session=session, settings=config)
    console.print(
        f"sent {report.sent}, failed {report.failed} (retried later), "
        f"superseded {report.superseded}, given up {report.dead}"
    )


@app.command("deliveries")
def list_deliveries(
    failed: bool = typer.Option(False, "--failed", help="Only the deliveries the bot gave up on."),
    limit: int = typer.Option(50, min=1, max=1000, help="At most this many, newest first."),
) -> None:
    """List the webhook deliveries received: what each asked and what the bot did."""
    with database_session() as session:
        query = select(GithubDelivery).order_by(GithubDelivery.id.desc())
        if failed:
            query = query.where(GithubDelivery.state == DeliveryState.FAILED)
        rows = list(session.scalars(query.limit(limit)))
        if not rows:
            console.print("no deliveries")
            return
        table = Table()
        for column in ("delivery", "event", "received", "state", "tries", "outcome"):
            table.add_column(column, justify="right" if column == "tries" else "left")
        for row in rows:
            table.add_row(
                row.delivery_id,
                f"{row.event} {row.action}".strip(),
                row.received_at.strftime("%Y-%m-%d %H:%M UTC"),
                row.state.value,
                str(row.attempts),
                row.outcome,
                style="red" if row.state is DeliveryState.FAILED else None,
            )
        console.print(table)


@app.command("redo")
def redo(
    delivery_id: str = typer.Argument(
        ..., help="The X-GitHub-Delivery id (see `perftrack github deliveries`)."
    ),
) -> None:
    """Carry a failed delivery out again (after fixing what failed); the scheduler picks it up."""
    with database_session() as session:
        row = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == delivery_id))
        if row is None:
            fail(f"no delivery {delivery_id!r}")
        try:
            requeue(row)
        except PerftrackError as error:
            fail(str(error))
        session.commit()
        console.print(f"delivery {delivery_id} will be carried out again")
