"""The measuring conditions and the hygiene flag, shown to people: the run's API, its page (escaped,
no 500 on odd values) and the series chart's points."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.factories import result_body

BURNER: dict[str, Any] = {
    "cpu": {
        "cpu_count": 2,
        "other_cores": 0.92,
        "other_share_pct": 46.0,
        "benchmark_cores": 1.01,
        "steal_pct": 0.1,
        "loadavg_before": [0.4, 0.3, 0.2],
        "loadavg_after": [1.9, 0.8, 0.4],
        "window_s": 12.5,
    }
}
THROTTLED: dict[str, Any] = {
    "gpu": {
        "before": [
            {
                "index": 0,
                "sm_clock_mhz": 1980,
                "max_sm_clock_mhz": 1980,
                "temperature_c": 83,
                "throttle_reasons": ["sw_thermal_slowdown", "<script>window.pwned=1</script>"],
            }
        ],
        "after": [{"index": 0, "sm_clock_mhz": 1410, "max_sm_clock_mhz": 1980, "throttle_reasons": []}],
    }
}


def upload(client: TestClient, token: str, conditions: Any, sha: str = "669a9bd") -> int:
    body = result_body(
        environment={"gpu": "NVIDIA H200", "conditions": conditions},
        commit={"sha": sha, "title": "t", "committed_at": "2026-03-01T10:00:00Z"},
    )
    response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.text
    run_id: int = response.json()["run_id"]
    return run_id


def test_the_run_api_exposes_the_conditions_and_the_flag(client: TestClient, runner_token: str) -> None:
    run_id = upload(client, runner_token, BURNER)
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["measurement_flag"] == "contention"
    assert run["excluded_reason"] == "contention: other processes took 0.92 cores (46 % of 2) during the run"
    assert run["rerun_job_id"] is None  # an import has no job to queue again
    assert run["conditions"]["cpu"]["other_cores"] == 0.92
    assert run["conditions"]["cpu"]["other_share_pct"] == 46.0
    assert run["conditions"]["cpu"]["loadavg_after"] == [1.9, 0.8, 0.4]
    assert run["conditions"]["gpus"] == []
    assert run["environment"]["conditions"] == BURNER  # the raw record stays as uploaded

    plain = client.get(f"/api/v1/runs/{upload(client, runner_token, None, sha='4739f2e')}").json()
    assert plain["measurement_flag"] is None
    assert plain["excluded_reason"] is None
    assert plain["conditions"] is None


def test_the_run_page_shows_conditions_and_flag_escaped(client: TestClient, runner_token: str) -> None:
    run_id = upload(client, runner_token, THROTTLED)
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    html = page.text
    assert 'id="measurement-flag"' in html
    assert "gpu throttled" in html
    assert "GPU throttled: sw_thermal_slowdown before (GPU 0)" in html
    assert 'id="gpu-conditions"' in html
    assert "1410 / 1980" in html
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html

    cpu_page = client.get(f"/runs/{upload(client, runner_token, BURNER, sha='4739f2e')}").text
    assert "0.92 cores (46 % of 2)" in cpu_page
    assert "over the limit" in cpu_page
    assert "1.90, 0.80, 0.40" in cpu_page


def test_odd_conditions_never_break_the_page(client: TestClient, runner_token: str) -> None:
    odd = {
        "cpu": {"cpu_count": 0, "other_cores": "lots", "error": "cannot read /proc: <b>"},
        "gpu": {"error": 3},
    }
    run_id = upload(client, runner_token, odd)
    assert client.get(f"/runs/{run_id}").status_code == 200
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["measurement_flag"] is None
    assert run["conditions"]["errors"] == ["cpu: cannot read /proc: <b>"]
    assert "cannot read /proc: &lt;b&gt;" in client.get(f"/runs/{run_id}").text


def test_the_series_chart_marks_flagged_runs(client: TestClient, runner_token: str) -> None:
    clean = upload(client, runner_token, None)
    flagged = upload(client, runner_token, BURNER, sha="4739f2e")
    chart = client.get("/api/v1/series/qwen-image-t2i-1024/H200/chart").json()
    points = {point["run_id"]: point for point in chart["points"]}
    assert points[clean]["flag"] is None
    assert points[flagged]["flag"] == "contention"
    assert points[flagged]["excluded_reason"].startswith("contention: other processes took 0.92 cores")
