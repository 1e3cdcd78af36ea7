"""``series_latest``: kept by ingest, it gives the overview exactly what ranking every run gave.

A varied history is built through the real ingest paths (``tests/tracker/overview_history.py``)
and the overview is compared field by field with one computed from every run, then again after what
changes a series behind ingest's back: a run excluded later, a commit whose estimated time is
replaced, a bulk load that bypassed ingest. On PostgreSQL, two uploads to one series at once.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from sqlalchemy import Engine, delete, select, update
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.factories import result_body
from tests.tracker.overview_history import (
    FLUX,
    LIMITS,
    QWEN,
    T0,
    assert_rows_as_rebuilt,
    build_history,
    reference_overview,
    sha,
    stored_rows,
    upload,
    when,
)
from tests.tracker.scheduling.test_service import scratch_engine
from tests.tracker.vcs.test_races import lock_waits
from tests.waiting import wait_until
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind, sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import RunStatus
from tracker.models import Candidate, Run, SeriesLatest
from tracker.series.latest import note_stored_runs, read_current_latest, rebuild_series_latest, refresh_series
from tracker.series.points import LATEST_POINTS, NightlyRun, SeriesPoint, merge_points, newer_nightly
from tracker.settings import Settings
from tracker.views.overview import SPARKLINE_RUNS, overview
from tracker.workflows.results import store_result
from wire import ResultIn

pytestmark = pytest.mark.dialect

__all__ = ["scratch_engine"]

# ------------------------------------------------------------------ the tests


def test_the_overview_from_series_latest_is_the_overview_from_every_run(session: Session) -> None:
    build_history(session)
    rows = overview(session=session)
    assert rows == reference_overview(session)
    qwen = next(row for row in rows if (row.case_slug, row.hardware) == (QWEN, "H200"))
    assert len(qwen.recent_ms) == SPARKLINE_RUNS  # more points than kept: the newest only
    assert qwen.last_nightly_status == "ok"
    assert qwen.open_regressions >= 1
    assert qwen.open_improvements >= 1
    flux = next(row for row in rows if (row.case_slug, row.hardware) == (FLUX, "GB300"))
    assert flux.latest_commit_sha == "e57e57e"  # estimated as of now: newer than every dated commit
    assert flux.last_nightly_status == "ok"
    assert flux.latest_value_ms != 80.0
    assert {(row.case_slug, row.hardware) for row in rows} >= {
        (QWEN, "GB300"),
        (QWEN, "H200"),
        (FLUX, "GB300"),
    }
    assert any(row.run_count == 0 for row in rows)  # cases without runs still show
    assert_rows_as_rebuilt(session)


def test_a_run_excluded_later_leaves_the_overview(session: Session) -> None:
    build_history(session)
    qwen = next(row for row in overview(session=session) if (row.case_slug, row.hardware) == (QWEN, "H200"))
    session.execute(update(Run).where(Run.id == qwen.latest_run_id).values(excluded_reason="refuted outlier"))
    run = session.get(Run, qwen.latest_run_id)
    assert run is not None
    refresh_series(session=session, keys=[(run.case_id, run.hardware_kind_id)])  # as detection does
    rows = overview(session=session)
    assert rows == reference_overview(session)
    assert (
        next(row for row in rows if row.case_slug == QWEN and row.hardware == "H200").latest_run_id != run.id
    )
    assert_rows_as_rebuilt(session)


def test_a_commit_whose_time_is_learnt_later_reorders_every_series_it_is_in(session: Session) -> None:
    build_history(session)
    upload(session, QWEN, "H200", None, 258.0)  # the estimated commit in a second series
    kept = stored_rows(session)
    # An upload brings the commit's real time: an old one. Only the uploaded series is written.
    body = result_body(
        case=QWEN,
        hardware="GB300",
        commit={"sha": "e57e57e", "committed_at": when(1)},
        denoise_step_mean_ms=None,
    )
    store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS, now=T0)
    flux_key = next(key for key in kept if key[0] == get_current_case(session=session, slug=FLUX).id)
    assert stored_rows(session)[flux_key] == kept[flux_key]  # left behind: its points' times are old
    rows = overview(session=session)
    assert rows == reference_overview(session)  # read from runs instead
    flux = next(row for row in rows if (row.case_slug, row.hardware) == (FLUX, "GB300"))
    assert flux.latest_commit_sha == sha(6)
    for case, hardware in ((FLUX, "GB300"), (QWEN, "H200")):  # a series' next write reads its runs
        upload(session, case, hardware, 40, 91.0)
        assert overview(session=session) == reference_overview(session)
    assert_rows_as_rebuilt(session)


def test_a_bulk_load_without_rows_is_read_from_runs_until_rebuilt(session: Session) -> None:
    build_history(session)
    expected = reference_overview(session)
    session.execute(delete(SeriesLatest))
    assert overview(session=session) == expected  # no row: every series read from its runs
    rebuild_series_latest(session=session)
    assert overview(session=session) == expected
    counts = set(stored_rows(session))
    assert read_current_latest(session=session, expected=counts).series.keys() <= counts


def test_merging_keeps_the_newest_points_and_the_latest_nightly() -> None:
    def point(run_id: int, hour: int) -> SeriesPoint:
        return SeriesPoint(run_id, hour, T0 + dt.timedelta(hours=hour), float(run_id), "median")

    kept = tuple(point(run_id, hour=run_id) for run_id in range(LATEST_POINTS, 0, -1))
    assert merge_points(kept, [point(100, hour=0)]) == kept  # older than every kept point: left out
    merged = merge_points(kept, [point(101, hour=5), point(102, hour=50), kept[0]])
    assert [p.run_id for p in merged[:2]] == [102, LATEST_POINTS]
    assert len(merged) == LATEST_POINTS
    assert point(101, 5) in merged
    assert kept[-1] not in merged
    early, late = NightlyRun(1, RunStatus.OK, T0), NightlyRun(2, RunStatus.FAILED, T0 + dt.timedelta(hours=1))
    assert newer_nightly(None, early) == early
    assert newer_nightly(late, early) == late
    assert newer_nightly(early, NightlyRun(0, RunStatus.OK, T0)) == early  # same time: higher run id


def test_candidates_with_patches_are_never_points(session: Session) -> None:
    upload(session, QWEN, "H200", 1, 260.0, patches=["refs/pull/7/head"])
    case = get_current_case(session=session, slug=QWEN)
    row = session.get(SeriesLatest, (case.id, get_hardware_kind(session=session, name="H200").id))
    assert row is not None
    assert row.points == []
    assert row.nightly_run_id is None
    assert session.scalar(select(Candidate.patch_count).join(Run, Run.candidate_id == Candidate.id)) == 1


def test_migration_0017_fills_in_the_rows_of_the_runs_stored_before_it(scratch_db_url: str) -> None:
    url = Settings(database_url=scratch_db_url).effective_database_url
    db.upgrade(url)
    engine = db.make_engine(url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
            build_history(session)
            expected = stored_rows(session)
        db.downgrade(url, "0016")
        db.upgrade(url)
        with db.session_scope(sessions) as session:
            assert stored_rows(session) == expected
            assert len(expected) == 3
    finally:
        engine.dispose()


def test_two_uploads_to_one_series_at_once_both_count(scratch_engine: Engine) -> None:
    """The second writer waits for the row the first one holds, then merges into what it wrote
    (PostgreSQL; without the row lock, the second would write its merge over the first one's)."""
    if scratch_engine.dialect.name != "postgresql":
        pytest.skip("SQLite takes one writer at a time: the two writes cannot interleave")
    sessions = db.make_session_factory(scratch_engine)
    with db.session_scope(sessions) as session:  # two runs stored, their series' row emptied
        for index in (1, 2):
            upload(session, QWEN, "H200", index, 260.0 + index)
        first_run, second_run = session.scalars(select(Run.id).order_by(Run.id)).all()
        session.execute(update(SeriesLatest).values(points=[], nightly_run_id=None))
    first = sessions()
    first.execute(select(SeriesLatest).with_for_update())  # the first writer has locked the row

    def second_upload() -> None:
        with db.session_scope(sessions) as session:
            note_stored_runs(session=session, run_ids=[second_run])

    thread = threading.Thread(target=second_upload)
    thread.start()
    wait_until(lambda: lock_waits(scratch_engine), 30, "the second writer to wait on the first one's row")
    assert thread.is_alive()
    note_stored_runs(session=first, run_ids=[first_run])
    first.commit()
    thread.join(timeout=30)
    assert not thread.is_alive()
    with db.session_scope(sessions) as session:
        [row] = session.scalars(select(SeriesLatest)).all()
        assert [point[0] for point in row.points] == [second_run, first_run]
    first.close()
