"""POST /api/v1/results/batch: one line per item, bad items refused alone, idempotent, set-based detection."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads, result_body
from tracker.models import Alert, Candidate, Commit, Run, RunArtifacts, RunStage
from tracker.series.pending import pending_count
from tracker.workflows.reactions import evaluate_pending_series
from wire import MAX_BATCH_ITEMS

pytestmark = pytest.mark.dialect

BATCH = "/api/v1/results/batch"


def _post(client: TestClient, token: str, results: list[Any]) -> Any:
    return client.post(BATCH, json={"results": results}, headers={"Authorization": f"Bearer {token}"})


def _counts(session: Session) -> tuple[int, ...]:
    session.expire_all()
    return tuple(
        session.scalar(select(func.count()).select_from(model)) or 0
        for model in (Run, RunArtifacts, RunStage, Commit, Candidate)
    )


def test_good_items_are_stored_and_bad_ones_refused_alone(client: TestClient, import_token: str) -> None:
    good = result_body(idempotency_key="batch-good-1")
    other = result_body(commit={"sha": "4739f2e", "title": "Fuse"}, step_times_ms=[280.0, 287.0, 288.0])
    answer = _post(
        client,
        import_token,
        [
            good,
            result_body(step_times_ms=[263.0, -1.0]),
            other,
            result_body(case="qwen-imag"),
            good,  # the same item twice: stored once
            "not an object",
            result_body(raw_log="x" * (1024 * 1024 + 1)),  # over max_log_bytes
            result_body(unexpected=1),
        ],
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    outcomes = [(item["index"], item["outcome"]) for item in body["items"]]
    assert outcomes == [
        (0, "stored"),
        (1, "refused"),
        (2, "stored"),
        (3, "refused"),
        (4, "duplicate"),
        (5, "refused"),
        (6, "refused"),
        (7, "refused"),
    ]
    assert (body["stored"], body["duplicate"], body["refused"]) == (2, 1, 5)
    items = body["items"]
    assert items[1]["reason"].startswith("step_times_ms[1]: ")
    assert (items[1]["field"], items[1]["error_status"]) == ("step_times_ms[1]", 422)
    assert items[3]["field"] == "case"
    assert "unknown case 'qwen-imag'" in items[3]["reason"]
    assert "qwen-image-t2i-1024" in items[3]["reason"]  # lists what is valid, as the single endpoint does
    assert items[5]["error_status"] == 422
    assert items[6]["error_status"] == 413
    assert "raw_log" in items[6]["reason"]
    assert items[7]["reason"].startswith("unexpected: ")
    assert items[4]["run_id"] == items[0]["run_id"]
    run = client.get(f"/api/v1/runs/{items[2]['run_id']}").json()
    assert run["commit"]["sha"] == "4739f2e"
    assert run["step_times_ms"] == [280.0, 287.0, 288.0]
    assert run["denoise_step_ms"] == 287.0


def test_posting_the_batch_again_stores_nothing_new(
    client: TestClient, import_token: str, session: Session
) -> None:
    payloads = regression_payloads()
    first = _post(client, import_token, payloads).json()
    assert [item["outcome"] for item in first["items"]] == ["stored"] * 3
    before = _counts(session)
    again = _post(client, import_token, payloads).json()
    assert [item["outcome"] for item in again["items"]] == ["duplicate"] * 3
    assert [item["run_id"] for item in again["items"]] == [item["run_id"] for item in first["items"]]
    assert (again["stored"], again["duplicate"], again["refused"]) == (0, 3, 0)
    assert _counts(session) == before
    # A result imported one at a time before is a duplicate in a batch too, and the other way round.
    single = client.post(
        "/api/v1/results",
        json=payloads[1],
        headers={"Authorization": f"Bearer {import_token}"},
    )
    assert single.status_code == 200
    assert single.json()["run_id"] == first["items"][1]["run_id"]


def test_a_key_reused_for_other_content_is_refused_for_that_item_only(
    client: TestClient, import_token: str, session: Session
) -> None:
    headers = {"Authorization": f"Bearer {import_token}"}
    stored = client.post("/api/v1/results", json=result_body(idempotency_key="reused-0001"), headers=headers)
    assert stored.status_code == 201
    answer = _post(
        client,
        import_token,
        [
            result_body(idempotency_key="reused-0001", step_times_ms=[300.0, 301.0]),
            result_body(idempotency_key="fresh-0001", step_times_ms=[270.0]),
            result_body(idempotency_key="fresh-0001", step_times_ms=[271.0]),  # reused within the batch
        ],
    ).json()
    assert [item["outcome"] for item in answer["items"]] == ["refused", "stored", "refused"]
    first, fresh, second = answer["items"]
    assert first["error_status"] == 409
    assert "reused-0001" in first["reason"]
    assert f"(run {stored.json()['run_id']})" in first["reason"]
    assert second["error_status"] == 409
    assert f"(run {fresh['run_id']})" in second["reason"]
    session.expire_all()
    run = session.get(Run, stored.json()["run_id"])
    assert run is not None
    assert run.denoise_step_ms == 263.5  # the stored run is untouched


def test_a_runner_bound_token_may_not_import_in_a_batch(
    client: TestClient, runner_token: str, session: Session
) -> None:
    headers = {"Authorization": f"Bearer {runner_token}"}
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=headers).status_code == 200
    before = _counts(session)
    answer = _post(client, runner_token, [result_body()])
    assert answer.status_code == 403
    assert "runner 'h200-1'" in answer.json()["detail"]
    assert _counts(session) == before


def test_a_batch_too_large_or_not_a_batch_is_refused_whole(
    client: TestClient, import_token: str, session: Session
) -> None:
    before = _counts(session)
    headers = {"Authorization": f"Bearer {import_token}"}
    too_many = _post(client, import_token, [result_body()] * (MAX_BATCH_ITEMS + 1))
    assert too_many.status_code == 422
    assert too_many.json()["detail"].startswith("results: ")
    assert str(MAX_BATCH_ITEMS) in too_many.json()["detail"]
    assert client.post(BATCH, json=[result_body()], headers=headers).status_code == 422
    assert client.post(BATCH, json={"results": {}}, headers=headers).status_code == 422
    assert client.post(BATCH, json={"results": [], "x": 1}, headers=headers).status_code == 422
    empty = _post(client, import_token, [])
    assert empty.status_code == 200
    assert empty.json() == {"items": [], "stored": 0, "duplicate": 0, "refused": 0}
    assert _counts(session) == before


def test_a_batch_marks_its_series_and_the_pending_pass_finds_the_regression(
    client: TestClient, import_token: str, session: Session
) -> None:
    # Inline detection is the default: a single import evaluates its series at once; a batch leaves
    # the series marked for the scheduler's pending pass, which runs whatever that setting says.
    payloads = regression_payloads()
    patched = result_body(case="wan2.2-t2v-a14b", patches=["#43601"], idempotency_key="patched-0001")
    answer = _post(client, import_token, [*payloads, patched]).json()
    assert answer["stored"] == 4
    assert client.get("/api/v1/alerts").json() == []
    # One mark for the regression's series, however many runs; the patched run's series gets none.
    assert pending_count(session=session) == 1
    touched = evaluate_pending_series(session=session, now=dt.datetime.now(dt.UTC))
    session.commit()
    assert touched
    assert pending_count(session=session) == 0
    [alert] = client.get("/api/v1/alerts").json()
    assert session.get(Alert, alert["id"]) is not None
