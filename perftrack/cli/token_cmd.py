"""``perftrack token``: create, list, rotate and revoke API tokens."""

from __future__ import annotations

import typer
from rich.table import Table

from perftrack.cli.common import console, database_session
from tracker.access.tokens import create_token, list_tokens, revoke_token, rotate_token
from tracker.enums import TokenRole

app = typer.Typer(help="Manage API tokens (stored hashed; shown once).", no_args_is_help=True)


@app.command()
def create(
    name: str = typer.Argument(..., help="A name to recognise the token by, e.g. h200-runner-1."),
    role: TokenRole = typer.Option(
        TokenRole.RUNNER, "--role", help="runner: upload results; admin: also triage."
    ),
) -> None:
    """Create a token and print it once: perftrack keeps only its hash."""
    with database_session() as session:
        issued = create_token(session=session, name=name, role=role)
    console.print(
        f"created {role.value} token [bold]{name}[/]; store it now, it is not shown again:", highlight=False
    )
    print(issued.secret)


@app.command("list")
def list_() -> None:
    """List tokens (names, roles, prefixes; never the secrets)."""
    with database_session() as session:
        tokens = list_tokens(session=session)
        table = Table("name", "role", "prefix", "created", "last used", "revoked")
        for token in tokens:
            table.add_row(
                token.name,
                token.role.value,
                token.prefix + "…",
                f"{token.created_at:%Y-%m-%d %H:%M}",
                f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never",
                f"{token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "",
            )
    console.print(table)


@app.command()
def revoke(name: str = typer.Argument(..., help="Name of the token to revoke.")) -> None:
    """Revoke a token: it stops authenticating at once."""
    with database_session() as session:
        revoke_token(session=session, name=name)
    console.print(f"revoked [bold]{name}[/]")


@app.command()
def rotate(name: str = typer.Argument(..., help="Name of the token to rotate.")) -> None:
    """Give a token a new secret, printed once; the old secret stops working at once."""
    with database_session() as session:
        issued = rotate_token(session=session, name=name)
        role = issued.token.role.value
    console.print(
        f"rotated {role} token [bold]{name}[/]; the old secret no longer works. "
        "Store the new one now, it is not shown again:",
        highlight=False,
    )
    print(issued.secret)
