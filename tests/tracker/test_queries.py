"""Read models: series never touch step vectors or logs; the overview's query count is constant."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.ingest import IngestLimits, ingest_result
from tracker.queries import overview, series
from tracker.schemas import ResultIn

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
        ingest_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
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
    ingest_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    data = series(session=session, case_slug="qwen-image-t2i-1024", hardware="H200")
    assert data.total == 3
    assert all(point.value != 100.0 for point in data.points)
    qwen = next(row for row in overview(session=session) if row.case_slug == "qwen-image-t2i-1024")
    assert qwen.latest_value_ms != 100.0
