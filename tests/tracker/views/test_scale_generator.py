"""The scale generator (benchmarks/scale) at a tiny size: rows as ingest stores them, read by the pages."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select, text

from benchmarks.scale.generate import (
    START,
    ScaleConfig,
    attempt_row,
    commit_in,
    generate,
    job_key_of,
    job_row,
    nightly_payload,
    run_rows,
)
from benchmarks.scale.shape import case_shapes, series_shape
from tests.tracker.overview_history import reference_overview
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason
from tracker.ingest.results import IngestLimits
from tracker.models import Job, JobAttempt, Run, RunArtifacts, RunStage, SeriesLatest
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.series.latest import rebuild_series_latest
from tracker.series.points import LATEST_POINTS
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.views.overview import SPARKLINE_RUNS, overview
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result
from web.app import create_app

CONFIG = ScaleConfig(nights=12, cases=3, hardware=2, comparisons=2, runners_per_kind=2)


@pytest.fixture
def generated(migrated_db_url: str, tmp_path: Path) -> tuple[str, Path, Any]:
    report = generate(migrated_db_url, tmp_path / "suites", CONFIG)
    return migrated_db_url, tmp_path / "suites", report


def test_counts_are_consistent(generated: tuple[str, Path, Any]) -> None:
    url, _, report = generated
    nightly = CONFIG.nights * CONFIG.cases * CONFIG.hardware
    engine = db.make_engine(url)
    with engine.connect() as connection:

        def scalar(sql: str) -> int:
            return int(connection.execute(text(sql)).scalar_one())

        assert (
            scalar("SELECT COUNT(*) FROM runs WHERE job_id IN (SELECT id FROM jobs WHERE reason = 'nightly')")
            == nightly
        )
        assert scalar("SELECT COUNT(*) FROM runs") == report.runs > nightly  # comparisons' rounds on top
        assert scalar("SELECT COUNT(*) FROM run_artifacts") == report.runs
        assert scalar("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')") == report.runs
        assert scalar("SELECT COALESCE(SUM(denoise_step_count), 0) FROM runs") == report.step_times
        assert scalar("SELECT COUNT(*) FROM runs WHERE status = 'failed'") == report.failed_runs
        assert scalar("SELECT COUNT(*) FROM comparisons") == CONFIG.comparisons
        assert scalar("SELECT COUNT(*) FROM comparison_results") >= CONFIG.comparisons
        assert scalar("SELECT COUNT(*) FROM commits") == CONFIG.nights
        assert scalar("SELECT COUNT(*) FROM alerts") == report.alerts
        # Every stored step vector has as many values as its run's count says.
        for count, steps in connection.execute(
            text(
                "SELECT r.denoise_step_count, a.step_times_ms FROM runs r JOIN run_artifacts a ON a.run_id = r.id"
            )
        ):
            assert len(steps if isinstance(steps, list) else json.loads(steps)) == (count or 0)
    engine.dispose()


def test_pages_and_api_read_the_generated_series(generated: tuple[str, Path, Any], tmp_path: Path) -> None:
    url, suite_dir, _ = generated
    slug, hardware = case_shapes(CONFIG.cases)[0].slug, CONFIG.hardware_names[0]
    engine = db.make_engine(url)
    with engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT COUNT(*) FROM runs r JOIN cases c ON c.id = r.case_id JOIN hardware_kinds h "
                "ON h.id = r.hardware_kind_id JOIN candidates d ON d.id = r.candidate_id "
                "WHERE c.slug = :slug AND h.name = :hw AND d.patch_count = 0"
            ),
            {"slug": slug, "hw": hardware},
        ).scalar_one()
        run_id = connection.execute(text("SELECT MAX(id) FROM runs WHERE status = 'ok'")).scalar_one()
    engine.dispose()
    settings = Settings(database_url=url, suite_dir=suite_dir, data_dir=tmp_path, environment="test")
    with TestClient(create_app(settings)) as client:
        series = client.get(f"/api/v1/series/{slug}/{hardware}?limit=1000")
        assert series.status_code == 200
        body = series.json()
        assert body["total_runs"] == stored == len(body["points"])
        assert {point["commit"]["sha"] for point in body["points"]} == {
            commit_in(n).sha for n in range(CONFIG.nights)
        }
        page = client.get(f"/series/{slug}/{hardware}")
        assert page.status_code == 200
        assert slug in page.text
        assert client.get(f"/runs/{run_id}").status_code == 200
        assert client.get("/").status_code == 200
        assert client.get("/alerts").status_code == 200


@pytest.mark.parametrize("failure", [None, "timed out after 3600 s"])
def test_rows_equal_what_ingest_stores(generated: tuple[str, Path, Any], failure: str | None) -> None:
    url, _, _ = generated
    shape = case_shapes(CONFIG.cases)[1]
    hardware = CONFIG.hardware_names[1]
    now = START + dt.timedelta(days=CONFIG.nights + 3)
    engine = db.make_engine(url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        case = get_current_case(session=session, slug=shape.slug)
        kind = get_hardware_kind(session=session, name=hardware)
        assert case.repository is not None
        commit = upsert_commit(
            session=session, repository=case.repository, commit=commit_in(CONFIG.nights + 1)
        )
        candidate = ensure_candidate(session=session, base=commit, patches=[])
        enqueue_job(session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.NIGHTLY)
        runner = register_runner(
            session=session,
            name="equivalence",
            hardware=kind,
            gpu_count=8,
            labels={},
            version="t",
            host="t",
            token=None,
            now=now,
        )
        job = workflow_jobs.claim(session=session, runner=runner, now=now)
        assert job is not None
        assert job.candidate_id == candidate.id
        result = nightly_payload(
            shape=series_shape(shape, hardware, CONFIG.nights, random.Random(1)),
            case=shape,
            hardware=hardware,
            night=CONFIG.nights + 1,
            steps=CONFIG.steps,
            measured_at=now,
            rng=random.Random(2),
            failure=failure,
        )
        limits = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
        stored = store_job_result(
            session=session, runner=runner, job_id=job.id, result=result, limits=limits, now=now
        ).run
        session.flush()
        run_row, stage_rows, artifact_row = run_rows(
            result,
            run_id=stored.id,
            job_id=job.id,
            case_id=case.id,
            hardware_kind_id=kind.id,
            candidate_id=candidate.id,
            commit_id=commit.id,
            runner_id=runner.id,
            created_at=stored.created_at,
        )
        assert _row(session, Run, Run.id == stored.id) == run_row
        stages = [_row(session, RunStage, RunStage.id == stage.id) for stage in stored.stages]
        assert [{k: v for k, v in s.items() if k != "id"} for s in stages] == stage_rows
        assert _row(session, RunArtifacts, RunArtifacts.run_id == stored.id) == artifact_row
        expected_job = job_row(
            job_id=job.id,
            key=job_key_of(
                candidate_key=candidate.key, case_id=case.id, kind_id=kind.id, reason=JobReason.NIGHTLY
            ),
            candidate_id=candidate.id,
            case=case,
            kind=kind,
            reason=JobReason.NIGHTLY,
            runner=(runner.id, runner.name),
            leased_at=now,
            finished_at=now,
            failure=failure,
        )
        actual_job = _row(session, Job, Job.id == job.id)
        for column in ("created_at",):  # the generator back-dates when a nightly job was queued
            expected_job.pop(column)
            actual_job.pop(column)
        assert actual_job == expected_job
        actual_attempt = _row(session, JobAttempt, JobAttempt.job_id == job.id)
        actual_attempt.pop("id")
        assert actual_attempt == attempt_row(
            job_id=job.id, runner_id=runner.id, leased_at=now, finished_at=now, failure=failure
        )
        session.rollback()
    engine.dispose()


def _row(session: Any, model: Any, where: Any) -> dict[str, Any]:
    """A stored row as column name → Python value (enums as their stored strings)."""
    row = session.execute(select(*model.__table__.columns).where(where)).mappings().one()
    return {
        key: (value.value if hasattr(value, "value") and not isinstance(value, dt.datetime) else value)
        for key, value in row.items()
    }


def test_after_a_bulk_load_the_overview_is_right_before_and_after_series_latest_is_rebuilt(
    migrated_db_url: str, tmp_path: Path
) -> None:
    """The generator writes runs around ingest: with no ``series_latest`` rows the overview reads every
    series from its runs, and once they are rebuilt it reads the rows; both give what every run gives."""
    config = ScaleConfig(nights=LATEST_POINTS + 20, cases=3, hardware=2, comparisons=1, runners_per_kind=1)
    generate(migrated_db_url, tmp_path / "suites", config, sweep_alerts=False)
    engine = db.make_engine(migrated_db_url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        # Some variety the generator does not write: each series' newest run refuted.
        session.execute(
            text(
                "UPDATE runs SET excluded_reason = 'refuted outlier' "
                "WHERE id IN (SELECT MAX(id) FROM runs GROUP BY case_id, hardware_kind_id)"
            )
        )
        expected = reference_overview(session)
        assert sum(len(row.recent_ms) == SPARKLINE_RUNS for row in expected) == len(expected)
        session.execute(delete(SeriesLatest))
        assert overview(session=session) == expected
        rebuild_series_latest(session=session)
        assert overview(session=session) == expected
        session.rollback()
    engine.dispose()
