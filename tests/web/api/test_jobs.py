"""The queue's HTTP contract: roles, 204 for no work, 404/409/422 answers, listings."""

from __future__ import annotations

from fastapi.testclient import TestClient

ENQUEUE = {
    "case": "qwen-image-t2i-1024",
    "hardware": "H200",
    "commit": {"sha": "abcdef1"},
    "patches": ["#43601"],
}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_only_admins_enqueue_and_enqueue_is_idempotent(
    client: TestClient, runner_token: str, admin_token: str
) -> None:
    assert client.post("/api/v1/jobs", json=ENQUEUE, headers=auth(runner_token)).status_code == 403
    assert client.post("/api/v1/jobs", json=ENQUEUE).status_code == 401
    first = client.post("/api/v1/jobs", json=ENQUEUE, headers=auth(admin_token))
    again = client.post("/api/v1/jobs", json=ENQUEUE, headers=auth(admin_token))
    assert (first.status_code, again.status_code) == (201, 200)
    job = first.json()["job"]
    assert job["id"] == again.json()["job"]["id"]
    assert job["candidate"] == "abcdef1 + #43601"
    assert job["state"] == "queued"


def test_claim_heartbeat_result_cycle(client: TestClient, runner_token: str, admin_token: str) -> None:
    job_id = client.post("/api/v1/jobs", json=ENQUEUE, headers=auth(admin_token)).json()["job"]["id"]
    assert client.post("/api/v1/runners/ghost/claim", headers=auth(runner_token)).status_code == 404
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8, "labels": {"rack": "a"}}
    registered = client.post("/api/v1/runners", json=runner, headers=auth(runner_token))
    assert registered.status_code == 200
    assert registered.json()["online"] is True
    claimed = client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token))
    assert claimed.status_code == 200
    spec = claimed.json()
    assert (spec["job_id"], spec["attempt"]) == (job_id, 1)
    assert spec["candidate"] == {"base_sha": "abcdef1", "patches": ["refs/pull/43601/head"], "carried": []}
    assert spec["case"]["flags"]["enable-torch-compile"] is True
    assert spec["case"]["requests"] == 1  # the case's own; only a comparison overrides it
    assert spec["repository"]["url"].startswith("https://github.com/sgl-project/sglang")
    assert client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token)).status_code == 204
    runners = client.get("/api/v1/runners").json()
    assert runners[0]["current_job_id"] == job_id
    beat = client.post(
        f"/api/v1/jobs/{job_id}/heartbeat?runner=h200-1", json={"attempt": 1}, headers=auth(runner_token)
    )
    assert beat.status_code == 200
    wrong = client.post(
        f"/api/v1/jobs/{job_id}/heartbeat?runner=h200-1", json={"attempt": 2}, headers=auth(runner_token)
    )
    assert wrong.status_code == 409
    result = {"attempt": 1, "status": "ok", "step_times_ms": [263.0, 264.0, 263.5]}
    stored = client.post(
        f"/api/v1/jobs/{job_id}/result?runner=h200-1", json=result, headers=auth(runner_token)
    )
    assert stored.status_code == 201, stored.text
    repeat = client.post(
        f"/api/v1/jobs/{job_id}/result?runner=h200-1", json=result, headers=auth(runner_token)
    )
    assert repeat.status_code == 200
    assert repeat.json()["run_id"] == stored.json()["run_id"]
    assert client.get(f"/api/v1/jobs/{job_id}").json()["state"] == "done"
    assert [job["id"] for job in client.get("/api/v1/jobs?state=done").json()] == [job_id]
    assert client.get("/api/v1/jobs?state=bogus").status_code == 422
    # The stacked-patch run is a run of its own, but not a point of the branch's series.
    assert client.get("/api/v1/series/qwen-image-t2i-1024/H200").json()["total_runs"] == 0


def test_runner_cannot_claim_for_unknown_hardware(client: TestClient, runner_token: str) -> None:
    response = client.post(
        "/api/v1/runners", json={"name": "x", "hardware": "TPU", "gpu_count": 1}, headers=auth(runner_token)
    )
    assert response.status_code == 422
    assert "unknown hardware kind 'TPU'" in response.json()["detail"]


def test_cancel(client: TestClient, admin_token: str, runner_token: str) -> None:
    job_id = client.post("/api/v1/jobs", json=ENQUEUE, headers=auth(admin_token)).json()["job"]["id"]
    assert client.post(f"/api/v1/jobs/{job_id}/cancel", headers=auth(runner_token)).status_code == 403
    cancelled = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=auth(admin_token))
    assert cancelled.json()["state"] == "cancelled"
    assert client.post(f"/api/v1/jobs/{job_id}/cancel", headers=auth(admin_token)).status_code == 409
