"""POST /api/v1/jobs/results: a runner's several attempts in one request, a lost lease refused alone."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

BATCH = "/api/v1/jobs/results"
RUNNER = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def result(attempt: int = 1, **overrides: Any) -> dict[str, Any]:
    return {"attempt": attempt, "status": "ok", "step_times_ms": [263.0, 264.0, 263.5], **overrides}


def leased_jobs(client: TestClient, runner_token: str, admin_token: str, count: int) -> list[int]:
    """``count`` jobs, each leased by runner h200-1 (attempt 1)."""
    for number in range(count):
        body = {"case": "qwen-image-t2i-1024", "hardware": "H200", "commit": {"sha": f"abcdef{number}"}}
        assert client.post("/api/v1/jobs", json=body, headers=auth(admin_token)).status_code == 201
    assert client.post("/api/v1/runners", json=RUNNER, headers=auth(runner_token)).status_code == 200
    claimed = [client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token)) for _ in range(count)]
    assert [answer.status_code for answer in claimed] == [200] * count
    return [int(answer.json()["job_id"]) for answer in claimed]


def test_live_attempts_are_stored_and_a_lost_lease_is_refused_alone(
    client: TestClient, runner_token: str, admin_token: str
) -> None:
    first, lost, bad = leased_jobs(client, runner_token, admin_token, 3)
    released = client.post(
        f"/api/v1/jobs/{lost}/release?runner=h200-1", json={"attempt": 1}, headers=auth(runner_token)
    )
    assert released.status_code == 200  # the lease of `lost` is gone: its job is queued again
    items = [
        {"job_id": first, "result": result()},
        {"job_id": lost, "result": result()},
        {"job_id": bad, "result": result(step_times_ms=[263.0, -1.0])},
        {"job_id": 2_000_000, "result": result()},
        {"job": first},
    ]
    answer = client.post(f"{BATCH}?runner=h200-1", json={"results": items}, headers=auth(runner_token))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    lines = [(item["index"], item["job_id"], item["outcome"], item["error_status"]) for item in body["items"]]
    assert lines == [
        (0, first, "stored", None),
        (1, lost, "refused", 409),
        (2, bad, "refused", 422),
        (3, 2_000_000, "refused", 404),
        (4, None, "refused", 422),
    ]
    assert (body["stored"], body["duplicate"], body["refused"]) == (1, 0, 4)
    assert "is no longer leased to h200-1" in body["items"][1]["reason"]
    assert body["items"][2]["reason"].startswith("result.step_times_ms[1]: ")
    assert body["items"][4]["reason"].startswith("job")
    # The stored attempt finished its job, as a single upload does; the others are untouched.
    assert client.get(f"/api/v1/jobs/{first}").json()["state"] == "done"
    assert client.get(f"/api/v1/jobs/{lost}").json()["state"] == "queued"
    assert client.get(f"/api/v1/jobs/{bad}").json()["state"] == "leased"
    run = client.get(f"/api/v1/runs/{body['items'][0]['run_id']}").json()
    assert (run["job_id"], run["attempt"], run["denoise_step_ms"]) == (first, 1, 263.5)
    # Sent again (the answer was lost): a duplicate with the same run, nothing new.
    again = client.post(BATCH, json={"results": items[:1]}, headers=auth(runner_token)).json()
    assert [(item["outcome"], item["run_id"]) for item in again["items"]] == [
        ("duplicate", body["items"][0]["run_id"])
    ]


def test_only_the_runner_itself_uploads_its_batch(
    client: TestClient, runner_token: str, admin_token: str, import_token: str
) -> None:
    [job] = leased_jobs(client, runner_token, admin_token, 1)
    body = {"results": [{"job_id": job, "result": result()}]}
    assert client.post(BATCH, json=body, headers=auth(admin_token)).status_code == 403
    assert client.post(f"{BATCH}?runner=other", json=body, headers=auth(runner_token)).status_code == 403
    assert client.post(BATCH, json=body, headers=auth(import_token)).status_code == 404  # bound to no runner
    assert client.post(BATCH, json=body).status_code == 401
    assert client.get(f"/api/v1/jobs/{job}").json()["state"] == "leased"
    assert client.post(BATCH, json=body, headers=auth(runner_token)).json()["stored"] == 1
