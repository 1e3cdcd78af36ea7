"""``perftrack alerts``: list alerts and sweep every series for changes, on the configured database."""

from __future__ import annotations

from collections.abc import Mapping

import typer
from rich.table import Table

from perftrack.cli.common import console, database_session, settings, start_queued_bisections
from tracker.detection.triage import alert_state, list_alerts
from tracker.models import Alert, utcnow
from tracker.views.alert_display import AlertDisplay, alert_displays
from tracker.workflows.sweep import sweep

app = typer.Typer(
    help="Changes found on the series: list them, or sweep every series now.", no_args_is_help=True
)


def alerts_table(
    alerts: list[Alert], title: str = "", displays: Mapping[int, AlertDisplay] | None = None
) -> Table:
    """Alerts as a rich table: where, how much, how sure, what state, which culprit.

    With ``displays`` (:func:`tracker.views.alert_display.alert_displays`) each alert reads as the
    pages show it: its state (confirming, unconfirmed, or its triage status) and the paired estimate
    with its interval once rounds measured it; without, detection's first estimate.
    """
    table = Table(title=title or None)
    for column in (
        "id",
        "case",
        "hardware",
        "change",
        "before → after",
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
        display = displays.get(alert.id) if displays is not None else None
        change = display.text if display is not None else f"{alert.change_pct:+.1f} % (detection)"
        levels = f"{alert.before_value:.2f} → {alert.after_value:.2f} ms"
        if display is not None and display.before is not None and display.after is not None:
            levels = f"{display.before:.2f} → {display.after:.2f} {display.unit}"
        table.add_row(
            str(alert.id),
            alert.case.slug,
            alert.hardware_kind.name,
            change,
            levels,
            f"{alert.first_bad_commit.short_sha} {alert.first_bad_commit.title}"[:60],
            f"{culprit.short_sha} {culprit.title} ({culprit.author_name})"[:70]
            if culprit
            else alert.bisection_state or "",
            f"{basis}, {alert.confirmation}",
            display.state.value if display is not None else alert_state(alert),
            style="red" if alert.direction.value == "regression" else "green",
        )
    return table


@app.command("list")
def list_(
    status: str | None = typer.Option(
        None, help="open, confirming, unconfirmed, acknowledged, fixed, invalid, expected"
    ),
    case: str | None = typer.Option(None, help="Only this case (slug)."),
    hardware: str | None = typer.Option(None, help="Only this hardware kind."),
    limit: int = typer.Option(50, min=1, help="At most this many, newest first."),
) -> None:
    """List alerts, newest first."""
    with database_session() as session:
        alerts = list_alerts(session=session, status=status, case_slug=case, hardware=hardware, limit=limit)
        shown = alert_displays(session=session, alerts=alerts)
        console.print(alerts_table(alerts, displays=shown) if alerts else "no alerts")


@app.command("sweep")
def sweep_() -> None:
    """Evaluate every series now: create, confirm or close alerts as the data says."""
    with database_session() as session:
        report = sweep(session=session, now=utcnow(), telling=settings().culprit_telling())
        console.print(f"swept {report.series} series; {len(report.alerts_touched)} alerts created or changed")
        if report.alerts_touched:
            shown = alert_displays(session=session, alerts=report.alerts_touched)
            console.print(alerts_table(report.alerts_touched, displays=shown))
    started = start_queued_bisections()
    if started:
        console.print(f"{started} bisection(s) listed from git and started (or found unavailable)")
