"""A reference PNG declaring more pixels than Pillow opens, on each of the four upload routes: a 422
naming the frame for a single upload (the runner's spool sets a 4xx aside instead of retrying it),
that item alone refused in a batch, the others stored; never a 500."""

from __future__ import annotations

import base64
from typing import Any

from fastapi.testclient import TestClient

from tests.factories import result_body
from tests.tracker.outputs.test_images import BOMB
from tests.web.api.test_jobs_batch import auth, leased_jobs, result

FIELD = "output.frames.0.png_base64"


def _output(png: bytes) -> dict[str, Any]:
    frame = {"png_base64": base64.b64encode(png).decode("ascii")}
    return {"digest": "sha256:" + "5e" * 32, "width": 20_000, "height": 20_000, "frames": [frame]}


def test_an_import_with_a_bomb_is_refused_naming_the_frame(client: TestClient, runner_token: str) -> None:
    answer = client.post(
        "/api/v1/results", json=result_body(output=_output(BOMB)), headers=auth(runner_token)
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == FIELD
    assert "decompression bomb" in answer.json()["detail"]
    assert client.get("/api/v1/runs/1").status_code == 404


def test_a_batch_of_imports_keeps_its_valid_items(client: TestClient, runner_token: str) -> None:
    items = [result_body(output=_output(BOMB)), result_body(commit={"sha": "4739f2e"})]
    answer = client.post("/api/v1/results/batch", json={"results": items}, headers=auth(runner_token))
    assert answer.status_code == 200, answer.text
    lines = [(line["outcome"], line["error_status"], line["field"]) for line in answer.json()["items"]]
    assert lines == [("refused", 422, FIELD), ("stored", None, None)]


def test_a_job_result_with_a_bomb_is_refused_and_the_attempt_may_upload_again(
    client: TestClient, runner_token: str, admin_token: str
) -> None:
    [job] = leased_jobs(client, runner_token, admin_token, 1)
    url = f"/api/v1/jobs/{job}/result"
    answer = client.post(url, json=result(output=_output(BOMB)), headers=auth(runner_token))
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == FIELD
    assert client.post(url, json=result(), headers=auth(runner_token)).status_code == 201


def test_a_batch_of_job_results_keeps_its_valid_items(
    client: TestClient, runner_token: str, admin_token: str
) -> None:
    bombed, fine = leased_jobs(client, runner_token, admin_token, 2)
    items = [{"job_id": bombed, "result": result(output=_output(BOMB))}, {"job_id": fine, "result": result()}]
    answer = client.post("/api/v1/jobs/results", json={"results": items}, headers=auth(runner_token))
    assert answer.status_code == 200, answer.text
    lines = [(line["job_id"], line["outcome"], line["error_status"]) for line in answer.json()["items"]]
    assert lines == [(bombed, "refused", 422), (fine, "stored", None)]
    assert client.get(f"/api/v1/jobs/{fine}").json()["state"] == "done"
