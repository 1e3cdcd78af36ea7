"""The set-based batch store: every column exactly as one-by-one ingest stores it, refusals alone, and a
key stored concurrently between the look-up and the insert answered as a duplicate, never an error."""

from __future__ import annotations

import base64
import dataclasses
import io
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from PIL import Image
from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.factories import regression_payloads, result_body
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.errors import Conflict, PerftrackError
from tracker.ingest.batch import BatchItem, BatchOutcome, ingest_results, plan_results, write_plan
from tracker.ingest.results import IngestLimits, ingest_result
from tracker.models import Base, Candidate, Commit, Run, SeriesCount
from tracker.settings import Settings
from wire import ResultIn

pytestmark = pytest.mark.dialect

LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
SECRET = "pt_" + "S3cr3tT0ken" * 4
CONTENDED = {"conditions": {"cpu": {"cpu_count": 2, "other_cores": 0.92, "steal_pct": 0.1}}}


def _varied() -> list[ResultIn | PerftrackError]:
    """Results that exercise every column: summaries, flags, redaction, candidates, commit metadata."""
    failed = result_body(
        status="failed",
        failure_reason=f"CUDA out of memory (HF_TOKEN={SECRET})",
        step_times_ms=[],
        raw_log=f"Authorization: Bearer {SECRET}\nboom\n",
        commit={"sha": "1234abc"},  # no time: estimated, filled in by a later item
    )
    del failed["denoise_step_mean_ms"]
    bodies: list[dict[str, Any]] = [
        *regression_payloads(),
        result_body(),  # no idempotency key: the content's digest is its key
        result_body(
            step_times_ms=[],
            denoise_step_mean_ms=263.7,
            denoise_step_count=50,
            idempotency_key="mean-only-0001",
        ),
        failed,
        result_body(
            commit={"sha": "1234abc", "committed_at": "2026-05-19T09:00:00Z", "title": "Filled in"},
            environment={**CONTENDED, "HF_TOKEN": SECRET, "gpu": "H200"},  # flagged, redacted
            command=f"sglang generate --hf-token {SECRET}",
            warnings=[f"leaked {SECRET}"],
            stages=[
                {"name": "TextEncodingStage", "duration_ms": 10.0},
                {"name": "DenoisingStage", "duration_ms": 2.5},
            ],
            e2e_ms=14000.0,
            peak_memory_mb=46938.0,
            compile={"graph_breaks": 2, "recompiles": 1},
            requests_seen=2,
            warmup_requests=1,
            sources=["log", "perf_dump"],
            measured_at="2026-05-19T10:00:00+02:00",
            idempotency_key="flagged-0001",
        ),
        result_body(
            step_times_ms=[2.1, 1.16, 1.98, 2.05, 1.15],
            perf_dump={"denoise_step_clock": "thread_cpu", "token": SECRET},
            patches=["#43601", "abcdef1"],
            idempotency_key="patched-0001",
        ),
        result_body(commit={"sha": "669a9bd", "title": "Not the baseline"}, idempotency_key="disagree-01"),
        result_body(),  # a repeat of an earlier item
        result_body(idempotency_key="mean-only-0001", step_times_ms=[1.0]),  # key reused: refused
        result_body(case="no-such-case"),
        result_body(hardware="B200"),
        result_body(output=_output(_png(16, 8), _png(16, 8, 90)), idempotency_key="output-0001"),
        # A reference with PNG's signature that does not decode: refused alone, naming the field.
        result_body(output=_output(BROKEN_PNG), idempotency_key="output-0002"),
    ]
    items: list[ResultIn | PerftrackError] = [ResultIn.model_validate(body) for body in bodies]
    items.append(Conflict("refused before it came here"))
    return items


def _png(width: int, height: int, red: int = 200) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (red, 40, 10)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


BROKEN_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"not a png at all").decode("ascii")


def _output(*frames: str) -> dict[str, Any]:
    return {
        "digest": "sha256:" + "ab" * 32,
        "media": "video" if len(frames) > 1 else "image",
        "width": 32,
        "height": 16,
        "frame_count": 2 * len(frames),
        "file_name": "fox.mp4",
        "frames": [{"frame_index": 2 * index, "png_base64": png} for index, png in enumerate(frames)],
    }


def _rows(session: Session, name: str) -> list[dict[str, Any]]:
    table: Table = Base.metadata.tables[name]
    return [dict(row._mapping) for row in session.execute(select(table))]


def _snapshot(session: Session) -> dict[str, Any]:
    """Every stored column that does not depend on when or in which id order rows were written."""
    session.flush()
    session.expire_all()
    candidates = {row["id"]: row["key"] for row in _rows(session, "candidates")}
    commits = {row["id"]: row["sha"] for row in _rows(session, "commits")}
    runs = {row["id"]: row for row in _rows(session, "runs")}
    key_of = {run_id: row["idempotency_key"] for run_id, row in runs.items()}
    snapshot: dict[str, Any] = {
        "runs": sorted(
            (
                {
                    **row,
                    "candidate_id": candidates[row["candidate_id"]],
                    "commit_id": commits[row["commit_id"]],
                }
                | {"id": None, "created_at": None}
                for row in runs.values()
            ),
            key=lambda row: row["idempotency_key"],
        ),
        "run_stages": sorted(
            (key_of[row["run_id"]], row["position"], row["name"], row["duration_ms"])
            for row in _rows(session, "run_stages")
        ),
        "run_artifacts": sorted(
            ({**row, "run_id": key_of[row["run_id"]]} for row in _rows(session, "run_artifacts")),
            key=lambda row: row["run_id"],
        ),
        "run_outputs": sorted(
            ({**row, "run_id": key_of[row["run_id"]]} for row in _rows(session, "run_outputs")),
            key=lambda row: row["run_id"],
        ),
        "run_output_frames": sorted(
            ({**row, "run_id": key_of[row["run_id"]]} for row in _rows(session, "run_output_frames")),
            key=lambda row: (row["run_id"], row["position"]),
        ),
        "commits": sorted(
            (
                {**row, "id": None, "created_at": None}
                | ({"committed_at": None} if row["committed_at_estimated"] else {})
                for row in _rows(session, "commits")
            ),
            key=lambda row: row["sha"],
        ),
        "candidates": sorted(
            (row["key"], commits[row["base_commit_id"]], row["label"], row["patch_count"])
            for row in _rows(session, "candidates")
        ),
        "candidate_patches": sorted(
            (candidates[row["candidate_id"]], row["position"], row["kind"], row["ref"], row["pr_number"])
            for row in _rows(session, "candidate_patches")
        ),
        "series_counts": sorted(tuple(row.values()) for row in _rows(session, "series_counts")),
        # The overview's row a series: its points name runs and commits by id, [run, commit, ...].
        "series_latest": sorted(
            (
                row["case_id"],
                row["hardware_kind_id"],
                [[key_of[point[0]], commits[point[1]], *point[2:]] for point in row["points"]],
                key_of.get(row["nightly_run_id"]),
            )
            for row in _rows(session, "series_latest")
        ),
    }
    return snapshot


def _one_by_one(session: Session, items: Sequence[ResultIn | PerftrackError]) -> list[tuple[str, str]]:
    outcomes = []
    for item in items:
        if isinstance(item, PerftrackError):
            outcomes.append(("refused", str(item)))
            continue
        try:
            outcome = ingest_result(session=session, result=item, limits=LIMITS)
        except PerftrackError as error:
            outcomes.append(("refused", str(error)))
            continue
        kind = "stored" if outcome.created else "duplicate"
        outcomes.append((kind, " | ".join(outcome.warnings)))
    return outcomes


def test_a_batch_stores_every_column_as_one_by_one_ingest_does(session: Session) -> None:
    items = _varied()
    savepoint = session.begin_nested()
    expected_outcomes = _one_by_one(session, items)
    expected = _snapshot(session)
    savepoint.rollback()
    before = _snapshot(session)
    assert before["runs"] == []

    batch = ingest_results(session=session, results=items, limits=LIMITS)
    stored = _snapshot(session)
    outcomes = [
        (item.outcome.value, str(item.error) if item.error else " | ".join(item.warnings)) for item in batch
    ]
    # Run ids differ between the two passes; everything else is the same, refusals' wording too.
    strip_ids = [(kind, text.split(" (run ")[0]) for kind, text in outcomes]
    assert strip_ids == [(kind, text.split(" (run ")[0]) for kind, text in expected_outcomes]
    assert [item.outcome for item in batch].count(BatchOutcome.STORED) == 10
    assert [row["position"] for row in stored["run_output_frames"]] == [0, 1]
    assert "output.frames.0.png_base64" in outcomes[-2][1]
    assert any("Not the baseline" in text for _, text in outcomes)  # a disagreement warning came back
    assert stored.keys() == expected.keys()
    assert stored["series_latest"]  # the overview's rows were kept too
    for table in stored:
        assert stored[table] == expected[table], table
    flagged = next(row for row in stored["runs"] if row["idempotency_key"] == "flagged-0001")
    assert flagged["measurement_flag"] is not None
    filled = next(row for row in stored["commits"] if row["sha"] == "1234abc")
    assert (filled["title"], filled["committed_at_estimated"]) == ("Filled in", False)
    assert SECRET not in repr(stored)


def test_a_key_stored_concurrently_after_the_look_up_is_a_duplicate(session: Session) -> None:
    payloads = [ResultIn.model_validate(body) for body in regression_payloads()]
    plan = plan_results(session=session, results=payloads, limits=LIMITS)
    # Another upload stores the second result between this batch's look-up and its insert.
    raced = ingest_result(session=session, result=payloads[1], limits=LIMITS)
    items = write_plan(session=session, plan=plan)
    assert [item.outcome for item in items] == [
        BatchOutcome.STORED,
        BatchOutcome.DUPLICATE,
        BatchOutcome.STORED,
    ]
    assert items[1].run_id == raced.run.id
    assert session.scalar(select(SeriesCount.runs)) == 3  # each run counted once
    keys = session.scalars(select(Run.idempotency_key)).all()
    assert sorted(keys) == sorted(str(payload.idempotency_key) for payload in payloads)


def test_a_key_stored_concurrently_for_other_content_refuses_that_item_alone(session: Session) -> None:
    payloads = [ResultIn.model_validate(body) for body in regression_payloads()]
    plan = plan_results(session=session, results=payloads, limits=LIMITS)
    other = payloads[0].model_copy(update={"step_times_ms": [1.0, 2.0]})
    raced = ingest_result(session=session, result=other, limits=LIMITS)
    items = write_plan(session=session, plan=plan)
    assert [item.outcome for item in items] == [
        BatchOutcome.REFUSED,
        BatchOutcome.STORED,
        BatchOutcome.STORED,
    ]
    assert isinstance(items[0].error, Conflict)
    assert f"(run {raced.run.id})" in str(items[0].error)


@pytest.mark.parametrize("size", [1, 3])
def test_commits_and_candidates_are_created_once_per_distinct_value(session: Session, size: int) -> None:
    bodies = [
        result_body(idempotency_key=f"same-commit-{n:04d}", step_times_ms=[250.0 + n]) for n in range(size)
    ]
    items = ingest_results(
        session=session, results=[ResultIn.model_validate(b) for b in bodies], limits=LIMITS
    )
    assert [item.outcome for item in items] == [BatchOutcome.STORED] * size
    assert len(session.scalars(select(Commit)).all()) == 1
    assert len(session.scalars(select(Candidate)).all()) == 1
    assert all(item.plain and item.series == items[0].series for item in items)


def test_two_batches_racing_for_the_same_keys_store_each_once(migrated_db_url: str) -> None:
    # PostgreSQL: the second batch looks its keys up before the first commits, then waits on the
    # unique index and meets IntegrityError; SQLite: it waits for the write lock, then finds them.
    url = Settings(database_url=migrated_db_url).effective_database_url
    engine = db.make_engine(url)
    sessions = db.make_session_factory(engine)
    with db.session_scope(sessions) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
    payloads = [ResultIn.model_validate(body) for body in regression_payloads()]
    answers: dict[str, list[BatchItem]] = {}

    def second() -> None:
        with db.session_scope(sessions) as session:
            answers["second"] = ingest_results(session=session, results=payloads[::-1], limits=LIMITS)

    try:
        with db.session_scope(sessions) as session:
            answers["first"] = ingest_results(session=session, results=payloads, limits=LIMITS)
            racer = threading.Thread(target=second)
            racer.start()
            time.sleep(1.0)  # the second batch is waiting on this one's rows (or its write lock)
        racer.join(timeout=60)
        assert not racer.is_alive()
        with db.session_scope(sessions) as session:
            stored = session.scalars(select(Run.id).order_by(Run.id)).all()
            counted = session.scalar(select(SeriesCount.runs))
    finally:
        engine.dispose()
    assert [item.outcome for item in answers["first"]] == [BatchOutcome.STORED] * 3
    assert [item.outcome for item in answers["second"]] == [BatchOutcome.DUPLICATE] * 3
    assert [item.run_id for item in answers["second"]] == [item.run_id for item in answers["first"]][::-1]
    assert len(stored) == 3
    assert counted == 3


def test_imports_follow_the_cpu_contention_setting_one_by_one_and_in_batches(session: Session) -> None:
    shared_host = dataclasses.replace(LIMITS, flag_cpu_contention=False)

    def body(key: str) -> ResultIn:
        return ResultIn.model_validate(result_body(environment=CONTENDED, idempotency_key=key))

    def flag_of(key: str) -> object:
        return session.scalars(select(Run.measurement_flag).where(Run.idempotency_key == key)).one()

    ingest_result(session=session, result=body("contended-one-on"), limits=LIMITS)
    ingest_result(session=session, result=body("contended-one-off"), limits=shared_host)
    ingest_results(session=session, results=[body("contended-batch-on")], limits=LIMITS)
    ingest_results(session=session, results=[body("contended-batch-off")], limits=shared_host)
    assert flag_of("contended-one-on") is not None
    assert flag_of("contended-batch-on") is not None
    assert flag_of("contended-one-off") is None
    assert flag_of("contended-batch-off") is None
