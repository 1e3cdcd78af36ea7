"""``perftrack alerts``: list alerts and sweep every series for changes, on the configured database."""

from __future__ import annotations

import typer
from rich.table import Table

from perftrack.cli.common import console, database_session, start_queued_bisections
from tracker.detection.triage import alert_state, list_alerts
from tracker.models import Alert, utcnow
from tracker.workflows.sweep import sweep

app = typer.Typer(
    help="Changes found on the series: list them, or sweep every series now.", no_args_is_help=True
)


def alerts_table(alerts: list[Alert], title: str = "") -> Table:
    """Alerts as a rich table: where, how much, how sure, what state, which culprit."""
    table = Table(title=title or None)
    for column in (
        "id",
        "case",
        "hardware",
        "change",
        "before → after ms",
        "first bad",
        "culprit",
        "basis",
        "state",
    ):
        table.add_column(column, justify="right" if column in ("id", "change") else "left")
    for alert in alerts:
        culprit = alert.culprit_commit
        basis = (
            "single runs, no noise estimate"
            if alert.single_run_basis
            else f"noise {alert.noise_pct or 0:.2f} %"
        )
        table.add_row(
            str(alert.id),
            alert.case.slug,
            alert.hardware_kind.name,
            f"{alert.change_pct:+.1f} %",
            f"{alert.before_value:.2f} → {alert.after_value:.2f}",
            f"{alert.first_bad_commit.short_sha} {alert.first_bad_commit.title}"[:60],
            f"{culprit.short_sha} {culprit.title} ({culprit.author_name})"[:70]
            if culprit
            else alert.bisection_state or "",
            f"{basis}, {alert.confirmation}",
            alert_state(alert),
            style="red" if alert.direction.value == "regression" else "green",
        )
    return table


@app.command("list")
def list_(
    status: str | None = typer.Option(None, help="open, confirming, acknowledged, fixed, invalid, expected"),
    case: str | None = typer.Option(None, help="Only this case (slug)."),
    hardware: str | None = typer.Option(None, help="Only this hardware kind."),
    limit: int = typer.Option(50, min=1, help="At most this many, newest first."),
) -> None:
    """List alerts, newest first."""
    with database_session() as session:
        alerts = list_alerts(session=session, status=status, case_slug=case, hardware=hardware, limit=limit)
        console.print(alerts_table(alerts) if alerts else "no alerts")


@app.command("sweep")
def sweep_() -> None:
    """Evaluate every series now: create, confirm or close alerts as the data says."""
    with database_session() as session:
        report = sweep(session=session, now=utcnow())
        console.print(f"swept {report.series} series; {len(report.alerts_touched)} alerts created or changed")
        if report.alerts_touched:
            console.print(alerts_table(report.alerts_touched))
    started = start_queued_bisections()
    if started:
        console.print(f"{started} bisection(s) listed from git and started (or found unavailable)")
