"""Read models: series never touch step vectors or logs; the overview's query count is constant."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.catalog.cases import get_hardware_kind
from tracker.ingest.results import IngestLimits
from tracker.views.overview import BASELINE_RUNS, overview
from tracker.views.series import series
from tracker.views.series_chart import patched_runs, series_chart
from tracker.views.sparklines import sparkline
from tracker.workflows.results import store_result
from wire import ResultIn

LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)


@contextmanager
def recorded_sql(session: Session) -> Iterator[list[str]]:
    statements: list[str] = []
    connection = session.connection()

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    event.listen(connection, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(connection, "before_cursor_execute", record)


def _fill(session: Session, count: int, case: str = "qwen-image-t2i-1024") -> None:
    for index in range(count):
        body = result_body(
            case=case,
            commit={
                "sha": f"{index + 1:07x}",
                "committed_at": f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
            },
            step_times_ms=[260.0 + index % 7, 261.0, 262.0],
            denoise_step_mean_ms=None,
        )
        body = {key: value for key, value in body.items() if value is not None}
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    session.flush()


def test_series_reads_no_artifacts_and_orders_by_commit_time(session: Session) -> None:
    _fill(session, 30)
    with recorded_sql(session) as statements:
        data = series(session=session, case_slug="qwen-image-t2i-1024", hardware="H200", limit=20)
    assert not any("run_artifacts" in statement or "raw_log" in statement for statement in statements)
    assert len(statements) <= 5
    assert data.total == 30
    assert [point.commit_sha for point in data.points] == [f"{index:07x}" for index in range(11, 31)]
    assert data.points[0].change_pct is not None


def test_overview_query_count_does_not_grow_with_runs(session: Session) -> None:
    with recorded_sql(session) as few:
        overview(session=session)
    _fill(session, 25)
    _fill(session, 5, case="flux1-dev-serve-gb300")
    with recorded_sql(session) as many:
        rows = overview(session=session)
    assert len(many) == len(few)
    assert not any("run_artifacts" in statement for statement in many)
    qwen = next(row for row in rows if row.case_slug == "qwen-image-t2i-1024")
    assert qwen.run_count == 25
    assert qwen.latest_commit_sha == f"{25:07x}"


def test_stacked_candidates_stay_out_of_the_branch_series(session: Session) -> None:
    _fill(session, 3)
    body = result_body(
        commit={"sha": f"{3:07x}", "committed_at": "2026-01-01T00:00:02Z"},
        patches=["refs/pull/101/head"],
        step_times_ms=[100.0, 100.0],
        denoise_step_mean_ms=None,
    )
    body = {key: value for key, value in body.items() if value is not None}
    store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    data = series(session=session, case_slug="qwen-image-t2i-1024", hardware="H200")
    assert data.total == 3
    assert all(point.value != 100.0 for point in data.points)
    qwen = next(row for row in overview(session=session) if row.case_slug == "qwen-image-t2i-1024")
    assert qwen.latest_value_ms != 100.0


def test_overview_baseline_is_the_median_of_the_runs_before_the_latest(session: Session) -> None:
    _fill(session, 8)  # medians 261.0 (index % 7 = 0) up to 262.0: step values 260+i%7, 261, 262
    qwen = next(row for row in overview(session=session) if row.case_slug == "qwen-image-t2i-1024")
    medians = [statistics.median([260.0 + index % 7, 261.0, 262.0]) for index in range(8)]
    assert qwen.latest_value_ms == medians[-1]
    assert qwen.baseline_runs == BASELINE_RUNS
    assert qwen.baseline_ms == statistics.median(medians[-1 - BASELINE_RUNS : -1])
    assert qwen.recent_ms == tuple(medians)  # oldest first, for the sparkline
    assert qwen.open_alerts == 0
    assert qwen.rank == 2
    assert qwen.last_nightly_status is None  # imports are not nightly runs


def test_sparkline_scales_into_its_box_and_keeps_flat_series_flat() -> None:
    line = sparkline([100.0, 110.0, 105.0], width=100, height=20, pad=0)
    assert line is not None
    assert line.points == "0.0,20.0 50.0,0.0 100.0,10.0"
    assert (line.last_x, line.last_y) == (100.0, 10.0)
    flat = sparkline([100.0, 100.01, 100.0], width=100, height=20, pad=0)
    assert flat is not None
    assert all(9.0 <= float(point.split(",")[1]) <= 11.0 for point in flat.points.split())
    assert sparkline([1.0]) is None


def test_series_chart_and_patched_runs(session: Session) -> None:
    _fill(session, 6)
    body = result_body(
        commit={"sha": f"{6:07x}", "committed_at": "2026-01-01T00:00:05Z"},
        patches=["refs/pull/101/head"],
        step_times_ms=[100.0, 100.0],
        denoise_step_mean_ms=None,
    )
    body = {key: value for key, value in body.items() if value is not None}
    store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    with recorded_sql(session) as statements:
        chart = series_chart(session=session, case_slug="qwen-image-t2i-1024", hardware="H200")
    assert not any("run_artifacts" in statement for statement in statements)
    assert [point.kind for point in chart.series.points] == ["import"] * 6
    assert chart.band is not None
    values = [point.value for point in chart.series.points if point.value is not None]
    assert chart.band.level == statistics.median(values)
    assert chart.band.low < chart.band.level < chart.band.high
    patched = patched_runs(
        session=session,
        case=chart.series.case,
        hardware_kind_id=get_hardware_kind(session=session, name="H200").id,
    )
    assert [(run.value, run.patch_count, run.reason) for run in patched] == [(100.0, 1, "import")]
