"""``/series/{case}/{hardware}``: the runs of one series in commit order."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tracker.alerts import series_alerts, series_threshold
from tracker.catalog import get_hardware_kind
from tracker.models import Metric
from tracker.queries import METRIC_UNITS, parse_metric, series
from tracker.triage import alert_state
from web.deps import SessionDep, SettingsDep
from web.pages.templating import templates

router = APIRouter()


@router.get("/series/{case}/{hardware}", response_class=HTMLResponse)
def series_page(
    request: Request,
    case: str,
    hardware: str,
    session: SessionDep,
    settings: SettingsDep,
    metric: str = "denoise_step_ms",
) -> HTMLResponse:
    """Series table: commit, time, value, change vs the previous run."""
    chosen = parse_metric(metric)
    data = series(
        session=session, case_slug=case, hardware=hardware, metric=chosen, limit=settings.series_default_limit
    )
    kind = get_hardware_kind(session=session, name=data.hardware)
    threshold = series_threshold(session=session, case=data.case, hardware=kind)
    alerts = series_alerts(session=session, case=data.case, hardware=kind)
    return templates.TemplateResponse(
        request,
        "series.html",
        {
            "series": data,
            "points": list(reversed(data.points)),  # newest first in the table
            "metrics": [(m.value, METRIC_UNITS[m]) for m in Metric],
            "title": f"{data.case.slug} on {data.hardware}",
            "threshold": threshold,
            "alerts": [(alert, alert_state(alert)) for alert in alerts],
        },
    )
