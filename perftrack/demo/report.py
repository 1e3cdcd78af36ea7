"""What ``perftrack demo`` prints at the end: each series, the alerts with culprits, the comparison,
the scorecard, and where the demo's time went."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session

from perftrack.cli.alerts_cmd import alerts_table
from perftrack.cli.compare_cmd import comparison_table
from perftrack.demo.scorecard import Scorecard
from perftrack.demo.timing import IDLE, IDLE_LABEL, PARTS, JobKind, TimeBreakdown
from runners.toy import ToyCommit, ToyRepository
from tracker.catalog.cases import get_hardware_kind
from tracker.comparisons.calibration import list_calibrations
from tracker.detection.alerts import series_threshold
from tracker.detection.triage import SUSPECT_CONFIRMATIONS
from tracker.models import Alert, Case, Run
from tracker.views.series import series

HARDWARE = "cpu"


def print_series(session: Session, toy: ToyRepository, console: Console) -> None:
    """Every toy series commit by commit, with what the history says each commit does."""
    scripted = {commit.sha: commit for commit in toy.commits}
    kind = get_hardware_kind(session=session, name=HARDWARE)
    for case in session.scalars(select(Case).where(Case.is_current.is_(True)).order_by(Case.slug)):
        data = series(session=session, case_slug=case.slug, hardware=HARDWARE)
        threshold = series_threshold(session=session, case=case, hardware=kind)
        table = Table(title=f"{case.slug} on {HARDWARE} · median denoise step", title_justify="left")
        for column in ("commit", "title", "ms/step", "change", "graph breaks", "scripted as"):
            table.add_column(
                column, justify="right" if column in ("ms/step", "change", "graph breaks") else "left"
            )
        breaks = dict(
            session.execute(
                select(Run.id, Run.graph_breaks).where(Run.id.in_([point.run_id for point in data.points]))
            ).all()
        )
        for point in data.points:
            change = "" if point.change_pct is None else f"{point.change_pct:+.1f} %"
            style = ""
            if point.change_pct is not None and abs(point.change_pct) >= threshold.applied_pct:
                style = "red" if point.change_pct > 0 else "green"
            graph_breaks = breaks.get(point.run_id)
            table.add_row(
                point.commit_sha[:7],
                point.commit_title,
                f"{point.value:.2f}" if point.value is not None else f"failed: {point.failure_reason}",
                change,
                "—" if graph_breaks is None else str(graph_breaks),
                _scripted(scripted.get(point.commit_sha)),
                style=style,
            )
        console.print(table)
        console.print(f"threshold {threshold.describe()}", highlight=False)


def _scripted(commit: ToyCommit | None) -> str:
    if commit is None:
        return ""
    incident = f" (incident {commit.incident})" if commit.incident else ""
    return f"{commit.kind.value}{incident}"


def print_alerts(session: Session, toy: ToyRepository, console: Console) -> list[Alert]:
    """The alerts the demo raised, with culprits and bisection steps, checked against the script;
    then the suspects paired rounds refuted (never alerts)."""
    everything = list(session.scalars(select(Alert).order_by(Alert.case_id, Alert.id)))
    suspects = [alert for alert in everything if alert.confirmation in SUSPECT_CONFIRMATIONS]
    alerts = [alert for alert in everything if alert.confirmation not in SUSPECT_CONFIRMATIONS]
    for suspect in suspects:
        console.print(
            f"suspect {suspect.id} {suspect.case.slug} {suspect.change_pct:+.1f} % at "
            f"{suspect.first_bad_commit.short_sha} {suspect.first_bad_commit.title!r}: "
            f"{suspect.events[-1].reason if suspect.events else suspect.confirmation}",
            highlight=False,
            style="dim",
        )
    if not alerts:
        console.print("[yellow]no alerts were raised[/]")
        return alerts
    console.print(alerts_table(alerts, title="alerts raised"))
    scripted = {commit.sha: commit for commit in toy.commits}
    for alert in alerts:
        if not alert.bisection_steps:
            continue
        steps = ", ".join(
            f"{step.commit.short_sha} {step.outcome}" + (f" ({step.value:.2f} ms)" if step.value else "")
            for step in alert.bisection_steps
        )
        culprit = alert.culprit_commit
        truth = scripted.get(culprit.sha) if culprit else None
        verdict = (
            f" — the script planted {truth.kind.value} here"
            if truth and truth.kind.value != "neutral"
            else ""
        )
        console.print(
            f"alert {alert.id} bisection ({alert.bisection_state}): {steps}"
            + (
                f" → culprit [bold]{culprit.short_sha}[/] {culprit.title!r} by {culprit.author_name}{verdict}"
                if culprit
                else ""
            ),
            highlight=False,
        )
    return alerts


def print_calibrations(session: Session, console: Console) -> None:
    """What the A/A calibrations measured."""
    for calibration in list_calibrations(session=session, case=None, hardware=None, limit=20):
        rates = ", ".join(
            f"{rounds} rounds: {rate * 100:.0f} % false verdicts, detects ≥ {calibration.mde_pct.get(rounds, 0):.1f} %"
            for rounds, rate in sorted(calibration.false_verdict_rate.items(), key=lambda item: int(item[0]))
        )
        console.print(
            f"A/A calibration {calibration.case.slug} on {calibration.hardware_kind.name}: "
            f"{calibration.rounds} rounds, per-run noise {calibration.round_noise_pct:.2f} %; {rates}",
            highlight=False,
        )


def print_diagnoses(alerts: list[dict[str, Any]], console: Console) -> None:
    """Why each alert changed, as ``GET /api/v1/alerts`` says it: its first findings."""
    console.print("[bold]why: each alert's diagnosis[/] (most telling first)")
    for alert in sorted(alerts, key=lambda item: int(item["id"])):
        findings = alert.get("diagnosis") or []
        what = "output" if alert.get("kind") == "output" else alert["direction"]
        named = alert.get("culprit_commit") or alert["first_bad_commit"]
        console.print(
            f"  alert {alert['id']} · {escape(alert['case'])} · {what} at {named['sha'][:7]}", highlight=False
        )
        for finding in findings[:3]:
            console.print(f"    {finding['kind']}: {escape(finding['summary'])}", highlight=False)
        if not findings:
            console.print("    (nothing else differs beyond noise)")


def print_comparison(comparison: dict[str, Any], console: Console) -> None:
    """The PR comparison as the API returns it."""
    console.print(comparison_table(comparison))


def print_scorecard(card: Scorecard, console: Console) -> None:
    """Each planted change found or missed with its culprit, and the alerts nothing planted explains."""
    table = Table(title="scorecard: what the toy history planted", title_justify="left")
    for column in ("case", "planted change", "commit", "expected", "result"):
        table.add_column(column)
    for item in card.planted:
        incident = f" (incident {item.commit.incident})" if item.commit.incident else ""
        changed = ", output changed" if item.commit.changes_output else ""
        wanted = "faster, output changed" if item.commit.changes_output else item.direction
        table.add_row(
            item.case,
            f"{item.commit.kind.value}{incident}{changed}",
            f"{item.commit.sha[:7]} {item.commit.title}"[:64],
            wanted if item.expected else f"{wanted} (small here: optional)",
            f"found · {item.how}" if item.found else ("MISSED" if item.expected else "not raised"),
            style="green" if item.found else ("red" if item.expected else "dim"),
        )
    console.print(table)
    for change in card.verdicts:
        mark = "[green]right[/]" if change.found else f"[red]WRONG[/], expected {change.expected!r}"
        console.print(f"{escape(change.command)}: {escape(change.label)!r} · {mark}", highlight=False)
    for alert in card.false_alerts:
        console.print(
            f"[red]false alert {alert.alert_id}[/] {alert.case} {alert.direction} at "
            f"{alert.culprit_title!r}: {alert.why}",
            highlight=False,
        )
    for row in card.loop:
        mark = "[green]held[/]" if row.ok else "[red]FAILED[/]"
        console.print(f"loop: {escape(row.what)}: {mark} · {escape(row.seen)}", highlight=False)
    expected = [item for item in card.planted if item.expected]
    found = sum(item.found for item in expected)
    optional = len(card.planted) - len(expected)
    extra = (
        f" (+{sum(item.found for item in card.planted if not item.expected)}/{optional} optional)"
        if optional
        else ""
    )
    held = sum(row.ok for row in card.loop)
    if card.perfect:
        verdict = "[green]exactly the planted changes[/]"
    elif not card.missed and not card.false_alerts and all(change.found for change in card.verdicts):
        verdict = "[red]the loop with people fell short[/]"
    else:
        verdict = "[red]not what was planted[/]"
    right = sum(change.found for change in card.verdicts)
    verdicts = f", {right}/{len(card.verdicts)} change verdicts right" if card.verdicts else ""
    loop = f", {held}/{len(card.loop)} loop rows held" if card.loop else ""
    console.print(
        f"scorecard: {found}/{len(expected)} planted changes found{extra}{verdicts}, "
        f"{len(card.false_alerts)} alert(s) on neutral or unaffected commits{loop}: {verdict}"
    )


def print_time_table(spent: TimeBreakdown, console: Console) -> None:
    """Where the demo's time went: each part of the jobs' spans and the idle gaps (total, share,
    median per job), then the jobs each phase ran by what they were for."""
    table = Table(title="where the demo's time went", title_justify="left")
    for column in ("part", "total s", "share", "median per job s"):
        table.add_column(column, justify="left" if column == "part" else "right")
    wall = spent.wall_s or 1.0
    for name, label in (*PARTS, (IDLE, IDLE_LABEL)):
        total = spent.total_s.get(name)
        if total is None:
            continue
        median = spent.median_s.get(name)
        table.add_row(label, f"{total:.0f}", f"{total / wall:.0%}", "" if median is None else f"{median:.2f}")
    table.add_row("runner's wall time", f"{spent.wall_s:.0f}", "100%", "", style="bold")
    console.print(table)
    if spent.queue_wait_median_s is not None and spent.queue_wait_max_s is not None:
        console.print(
            f"queue wait per job (queued to leased; jobs queued together wait for each other, so it "
            f"is not added above): median {spent.queue_wait_median_s:.0f} s, max {spent.queue_wait_max_s:.0f} s",
            highlight=False,
        )
    kinds = [kind for kind in JobKind if any(phase.counts.get(kind) for phase in spent.phases)]
    jobs = Table(title="jobs per phase, by what they were for", title_justify="left")
    for column in ("phase", *kinds, "jobs", "wall s"):
        jobs.add_column(str(column), justify="left" if column == "phase" else "right")
    for phase in spent.phases:
        jobs.add_row(
            phase.phase.name,
            *(str(phase.counts.get(kind, 0) or "") for kind in kinds),
            str(phase.jobs),
            f"{phase.phase.wall_s:.0f}",
        )
    console.print(jobs)
