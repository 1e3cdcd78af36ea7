"""Series: one case on one hardware kind, one metric, runs in commit order."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tracker.views.series import parse_metric, series
from tracker.views.series_chart import series_chart
from web.deps import SessionDep, SettingsDep
from web.schemas import SeriesChartOut, SeriesOut
from web.schemas.errors import errors

router = APIRouter(prefix="/series", tags=["series"])


@router.get(
    "/{case}/{hardware}",
    response_model=SeriesOut,
    responses=errors(404, 422, notes={404: "No such case", 422: "Unknown metric or hardware kind"}),
)
def get_series(
    case: str,
    hardware: str,
    session: SessionDep,
    settings: SettingsDep,
    metric: str = "denoise_step_ms",
    limit: Annotated[int | None, Query(ge=1, description="newest runs to return")] = None,
) -> SeriesOut:
    """Series points ordered by commit time, each with run id, commit, value and change vs the previous."""
    cap = min(limit or settings.series_default_limit, settings.max_page_size)
    return SeriesOut.of(
        series(session=session, case_slug=case, hardware=hardware, metric=parse_metric(metric), limit=cap)
    )


@router.get(
    "/{case}/{hardware}/chart",
    response_model=SeriesChartOut,
    responses=errors(404, 422, notes={404: "No such case", 422: "Unknown metric or hardware kind"}),
)
def get_series_chart(
    case: str,
    hardware: str,
    session: SessionDep,
    settings: SettingsDep,
    metric: str = "denoise_step_ms",
    limit: Annotated[int | None, Query(ge=1, description="newest runs to draw")] = None,
) -> SeriesChartOut:
    """What the series chart draws: points by kind (nightly, confirm, bisect, import, ...) with commit,
    value and per-run IQR, the threshold band around the current level, and alerts at their commits."""
    cap = min(limit or settings.series_default_limit, settings.max_page_size)
    return SeriesChartOut.of(
        series_chart(
            session=session, case_slug=case, hardware=hardware, metric=parse_metric(metric), limit=cap
        )
    )
