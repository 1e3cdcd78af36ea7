"""``/``: a grid of cases (grouped by model family) × hardware kinds with the latest value of record,
its change vs the baseline, a sparkline of recent runs, open alerts and the last nightly; open
regressions first. Filters (model family, hardware, suite) live in the query string."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.detection.triage import list_alerts
from tracker.enums import AlertState, Direction, Metric
from tracker.views.alert_display import alert_displays
from tracker.views.overview import BASELINE_RUNS, SPARKLINE_RUNS, OverviewRow, overview
from tracker.views.sparklines import Sparkline, sparkline
from web.deps import SessionDep
from web.pages.templating import templates

router = APIRouter()
GROUP_LABELS = {0: "Open regressions", 1: "Recent regressions, fixed or acknowledged"}


@dataclass(frozen=True)
class GridCell:
    """One case on one hardware kind, with its sparkline."""

    row: OverviewRow
    spark: Sparkline | None


@dataclass(frozen=True)
class GridCase:
    """One row of the grid: a case and its cell per hardware column (``None``: not run there)."""

    slug: str
    title: str
    model: str
    cells: list[GridCell | None]
    regressed: bool


@dataclass(frozen=True)
class GridGroup:
    """Rows under one heading: open regressions first, then one group per model family."""

    label: str
    cases: list[GridCase]


def age(when: dt.datetime | None, now: dt.datetime) -> str:
    """``5 h ago``, ``3 d ago``: how old a time is, to a unit a reader takes in at a glance."""
    if when is None:
        return "never"
    seconds = max(0.0, (now - when).total_seconds())
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def _grid(rows: list[OverviewRow], hardware: list[str]) -> list[GridGroup]:
    by_case: dict[str, dict[str, OverviewRow]] = {}
    for row in rows:  # rows come regressions first, then family, case, hardware
        by_case.setdefault(row.case_slug, {})[row.hardware] = row
    groups: dict[str, list[GridCase]] = {}
    for slug, cells in by_case.items():
        first = next(iter(cells.values()))
        rank = min(cell.rank for cell in cells.values())
        regressed = rank == 0
        label = GROUP_LABELS.get(rank, first.family)
        groups.setdefault(label, []).append(
            GridCase(
                slug=slug,
                title=first.case_title,
                model=first.model,
                cells=[
                    GridCell(row=cells[name], spark=sparkline(cells[name].recent_ms))
                    if name in cells
                    else None
                    for name in hardware
                ],
                regressed=regressed,
            )
        )
    return [GridGroup(label=label, cases=cases) for label, cases in groups.items()]


@router.get("/", response_class=HTMLResponse)
def overview_page(
    request: Request,
    session: SessionDep,
    model: str = "",
    hardware: str = "",
    suite: str = "",
) -> HTMLResponse:
    """The morning view: what got slower, where, since which commit, by how much."""
    all_rows = overview(session=session)
    rows = [
        row
        for row in all_rows
        if (not model or row.family == model)
        and (not hardware or row.hardware == hardware)
        and (not suite or row.suite == suite)
    ]
    # Hardware with the most measured series first: on a phone the first column is what shows.
    measured_on: dict[str, int] = {}
    for row in rows:
        measured_on[row.hardware] = measured_on.get(row.hardware, 0) + (1 if row.run_count else 0)
    columns = sorted(measured_on, key=lambda name: (-measured_on[name], name))
    # Open alerts only (suspects still confirming or unconfirmed are not); a changed output is
    # listed apart from the speed regressions, with its figures in dB.
    open_alerts = [
        alert
        for alert in list_alerts(
            session=session, status=AlertState.OPEN.value, direction=Direction.REGRESSION.value
        )
        if (not hardware or alert.hardware_kind.name == hardware)
        and (not model or alert.case.model_family == model)
        and (not suite or alert.case.suite == suite)
    ]
    regressions = [alert for alert in open_alerts if alert.metric is not Metric.OUTPUT]
    output_changes = [alert for alert in open_alerts if alert.metric is Metric.OUTPUT]
    now = dt.datetime.now(dt.UTC)
    return templates.TemplateResponse(
        request,
        "overview.html",
        {
            "title": "Overview",
            "rows": rows,
            "all_rows": all_rows,
            "columns": columns,
            "groups": _grid(rows, columns),
            "regressions": regressions,
            "output_changes": output_changes,
            "displays": alert_displays(session=session, alerts=open_alerts),
            "measured": sum(1 for row in all_rows if row.run_count),
            "filters": {"model": model, "hardware": hardware, "suite": suite},
            "options": {
                "model": sorted({row.family for row in all_rows}),
                "hardware": sorted({row.hardware for row in all_rows}),
                "suite": sorted({row.suite for row in all_rows}),
            },
            "baseline_runs": BASELINE_RUNS,
            "sparkline_runs": SPARKLINE_RUNS,
            "now": now,
            "age": lambda when: age(when, now),
        },
    )
