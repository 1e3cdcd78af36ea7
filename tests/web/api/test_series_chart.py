"""``GET /api/v1/series/{case}/{hardware}/chart``: what the series chart draws, as JSON."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import regression_payloads

CHART = "/api/v1/series/qwen-image-t2i-1024/H200/chart"


def _import(client: TestClient, token: str, title: str | None = None) -> list[int]:
    ids = []
    for body in regression_payloads(title):
        response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 201, response.text
        ids.append(response.json()["run_id"])
    return ids


def test_chart_points_band_and_alerts(client: TestClient, runner_token: str) -> None:
    ids = _import(client, runner_token, title="<script>window.pwned=1</script> & <b>x</b>")
    chart = client.get(CHART).json()
    assert chart["case"] == "qwen-image-t2i-1024"
    assert chart["metric"] == "denoise_step_ms"
    assert chart["unit"] == "ms"
    assert chart["total_runs"] == 3
    assert [point["run_id"] for point in chart["points"]] == ids  # oldest first
    assert [point["sha"] for point in chart["points"]] == ["669a9bd", "4739f2e", "9c1d5e2"]
    assert [point["value"] for point in chart["points"]] == [263.7, 287.6, 258.2]
    assert {point["kind"] for point in chart["points"]} == {"import"}
    # Titles travel as data; escaping for display is the page's job.
    assert chart["points"][1]["title"] == "<script>window.pwned=1</script> & <b>x</b>"
    band = chart["band"]
    assert band["low"] < band["level"] < band["high"]
    assert band["pct"] > 0
    for alert in chart["alerts"]:
        assert alert["direction"] in {"regression", "improvement"}
        assert alert["first_bad"]["sha"] in {"4739f2e", "9c1d5e2"}


def test_chart_metric_and_limit(client: TestClient, runner_token: str) -> None:
    ids = _import(client, runner_token)
    limited = client.get(CHART, params={"metric": "peak_memory_mb", "limit": 2}).json()
    assert limited["metric"] == "peak_memory_mb"
    assert limited["unit"] == "MiB"
    assert [point["run_id"] for point in limited["points"]] == ids[1:]
    assert all(point["iqr"] is None for point in limited["points"])  # the IQR band is per-step only
    assert limited["total_runs"] == 3
    breaks = client.get(CHART, params={"metric": "graph_breaks"}).json()
    assert breaks["band"] is None


def test_chart_errors(client: TestClient) -> None:
    assert client.get(CHART, params={"metric": "nope"}).status_code == 422
    assert client.get(CHART, params={"limit": 0}).status_code == 422
    missing = client.get("/api/v1/series/no-such-case/H200/chart")
    assert missing.status_code == 404
    assert client.get("/api/v1/series/qwen-image-t2i-1024/NOPE/chart").status_code == 422  # unknown hardware


def test_chart_of_an_empty_series(client: TestClient) -> None:
    chart = client.get(CHART).json()
    assert chart["points"] == []
    assert chart["band"] is None
    assert chart["alerts"] == []
