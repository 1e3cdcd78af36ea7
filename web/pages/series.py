"""``/series/{case}/{hardware}``: the chart of one series (drawn in the browser from
``/api/v1/series/{case}/{hardware}/chart``), its alerts, the stacked-patch candidates measured on
the case, and the runs in commit order. Metric and range live in the query string."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from tracker.catalog.cases import get_hardware_kind
from tracker.detection.alerts import series_alerts
from tracker.detection.triage import alert_state
from tracker.enums import Metric
from tracker.views.series import METRIC_COLUMNS, METRIC_UNITS, parse_metric
from tracker.views.series_chart import patched_runs, series_chart
from web.deps import SessionDep, SettingsDep
from web.pages.templating import templates

router = APIRouter()

RANGES = (30, 100, 365)
METRIC_LABELS: dict[Metric, str] = {
    Metric.DENOISE_STEP_MS: "Denoise step",
    Metric.DENOISE_STAGE_MS: "Denoise stage",
    Metric.E2E_MS: "End to end",
    Metric.PEAK_MEMORY_MB: "Peak memory",
    Metric.GRAPH_BREAKS: "Graph breaks",
}


@router.get("/series/{case}/{hardware}", response_class=HTMLResponse)
def series_page(
    request: Request,
    case: str,
    hardware: str,
    session: SessionDep,
    settings: SettingsDep,
    metric: str = "denoise_step_ms",
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> HTMLResponse:
    """Series chart, alerts, patched candidates and the runs table (newest first)."""
    chosen = parse_metric(metric)
    cap = min(limit or settings.series_default_limit, settings.max_page_size)
    chart = series_chart(session=session, case_slug=case, hardware=hardware, metric=chosen, limit=cap)
    data = chart.series
    kind = get_hardware_kind(session=session, name=data.hardware)
    alerts = series_alerts(session=session, case=data.case, hardware=kind)
    path = f"{quote(data.case.slug, safe='')}/{quote(data.hardware, safe='')}"
    query = {"metric": chosen.value} | ({"limit": str(cap)} if limit else {})
    return templates.TemplateResponse(
        request,
        "series.html",
        {
            "series": data,
            "points": list(reversed(data.points)),  # newest first in the table
            "metrics": [(m.value, METRIC_LABELS[m], METRIC_UNITS[m]) for m in METRIC_COLUMNS],
            "metric_label": METRIC_LABELS[chosen],
            "title": f"{data.case.slug} on {data.hardware}",
            "threshold": chart.threshold,
            "band": chart.band,
            "alerts": [(alert, alert_state(alert)) for alert in alerts],
            "patched": patched_runs(session=session, case=data.case, hardware_kind_id=kind.id),
            "chart_src": f"/api/v1/series/{path}/chart?{urlencode(query)}",
            "limit": limit,
            "ranges": [
                (str(n), f"?{urlencode({'metric': chosen.value, 'limit': n})}", limit == n) for n in RANGES
            ]
            + [("all", f"?{urlencode({'metric': chosen.value})}", limit is None)],
        },
    )
