"""The comparison and calibration HTTP contract: roles, 401/403/404/409/422, a full A/B cycle driven
through the runner endpoints, and ``perftrack compare`` against the app."""

from __future__ import annotations

import io
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rich.console import Console
from typer.testing import CliRunner

from perftrack.cli import app
from perftrack.cli.compare_cmd import run_compare
from perftrack.cli.tracker_http import CLI_RETRY
from runners.http import TrackerHttp
from tracker.settings import get_settings

CASE = "qwen-image-t2i-1024"
COMPARE: dict[str, Any] = {
    "base": {"sha": "669a9bd"},
    "head": {"sha": "669a9bd", "patches": ["#43601"]},
    "cases": [CASE],
    "pr_number": 43601,
    "pr_url": "https://github.com/sgl-project/sglang/pull/43601",
}
CALIBRATE: dict[str, Any] = {"candidate": {"sha": "669a9bd"}, "cases": [CASE], "rounds": 2}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


WRITES = [
    ("/api/v1/comparisons", COMPARE),
    ("/api/v1/comparisons/1/cancel", None),
    ("/api/v1/calibrations", CALIBRATE),
]


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_writes_need_an_admin_token(
    client: TestClient, runner_token: str, path: str, body: dict[str, Any] | None
) -> None:
    anonymous = client.post(path, json=body)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"
    assert client.post(path, json=body, headers=auth("pt_unknown")).status_code == 401
    assert client.post(path, json=body, headers=auth(runner_token)).status_code == 403


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/v1/comparisons/999999"), ("POST", "/api/v1/comparisons/999999/cancel")],
)
def test_unknown_comparison_is_404(client: TestClient, admin_token: str, method: str, path: str) -> None:
    response = client.request(method, path, headers=auth(admin_token))
    assert response.status_code == 404
    assert response.json() == {"detail": "no comparison 999999"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cases": []}, "cases"),
        ({"base": {"sha": "not-a-sha"}}, "base.sha"),
        ({"head": {"sha": "669a9bd", "patches": ["main"]}}, "patches[0]"),
        ({"rounds": 4, "max_rounds": 2}, "max_rounds: 2 is below rounds (4)"),
        ({"rounds": 0}, "rounds"),
        ({"surprise": 1}, "surprise"),
        ({"cases": ["no-such-case"]}, "unknown case 'no-such-case'"),
        ({"hardware": ["GB300"]}, "does not run on GB300"),
        ({"hardware": ["TPU"]}, "unknown hardware kind 'TPU'"),
    ],
)
def test_bad_requests_are_422_naming_the_field(
    client: TestClient, admin_token: str, change: dict[str, Any], message: str
) -> None:
    response = client.post("/api/v1/comparisons", json={**COMPARE, **change}, headers=auth(admin_token))
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/comparisons?state=bogus",
        "/api/v1/comparisons?pr_number=0",
        "/api/v1/comparisons?limit=0",
        "/api/v1/calibrations?hardware=TPU",
        "/api/v1/calibrations?case=no-such-case",
    ],
)
def test_bad_filters_are_422(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 422


def test_calibration_needs_two_rounds(client: TestClient, admin_token: str) -> None:
    response = client.post("/api/v1/calibrations", json={**CALIBRATE, "rounds": 1}, headers=auth(admin_token))
    assert response.status_code == 422


def drive(client: TestClient, token: str, comparison: dict[str, Any], ms: dict[str, float]) -> None:
    """Run every queued job as a runner would, each arm measuring ``ms[arm]``."""
    arms: dict[int, str] = {}

    def learn(detail: dict[str, Any]) -> None:
        for result in detail["results"]:
            for item in result["rounds"]:
                arms[item["base"]["job_id"]] = "base"
                arms[item["head"]["job_id"]] = "head"

    learn(comparison)
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=auth(token)).status_code == 200
    for _ in range(100):
        claimed = client.post("/api/v1/runners/h200-1/claim", headers=auth(token))
        if claimed.status_code == 204:
            return
        spec = claimed.json()
        if spec["job_id"] not in arms:  # a round scheduled after an inconclusive one
            learn(client.get(f"/api/v1/comparisons/{comparison['id']}").json())
        if spec["reason"] == "evidence":  # a regression's profiled re-run of either side
            arms[spec["job_id"]] = "base"
        value = ms[arms[spec["job_id"]]] * (1.0 + 0.002 * (spec["job_id"] % 3 - 1))
        upload = {"attempt": spec["attempt"], "status": "ok", "step_times_ms": [value] * 3}
        stored = client.post(
            f"/api/v1/jobs/{spec['job_id']}/result?runner=h200-1", json=upload, headers=auth(token)
        )
        assert stored.status_code == 201, stored.text
    raise AssertionError("the queue never drained")


def test_a_b_cycle(client: TestClient, admin_token: str, runner_token: str) -> None:
    created = client.post("/api/v1/comparisons", json=COMPARE, headers=auth(admin_token))
    assert created.status_code == 201, created.text
    comparison = created.json()
    assert comparison["state"] == "pending"
    assert comparison["base"] == {"label": "669a9bd", "sha": "669a9bd", "patches": []}
    assert comparison["head"]["patches"] == ["refs/pull/43601/head"]
    assert comparison["requested_by"] == "test-admin"
    (result,) = comparison["results"]
    assert (result["case"], result["hardware"], result["verdict"]) == (CASE, "H200", "pending")
    assert [item["round"] for item in result["rounds"]] == [1, 2]
    assert {item["base"]["job_state"] for item in result["rounds"]} == {"queued"}
    assert [item["first_arm"] for item in result["rounds"]] == [None, None]  # nothing started yet
    assert result["order_effect"] is None  # not a calibration
    drive(client, runner_token, comparison, {"base": 263.7, "head": 287.6})
    detail = client.get(f"/api/v1/comparisons/{comparison['id']}").json()
    assert detail["state"] == "done"
    assert detail["finished_at"] is not None
    (result,) = detail["results"]
    assert result["verdict"] == "regression", result["note"]
    assert result["change_pct"] == pytest.approx(9.1, abs=0.5)
    assert result["ci_low_pct"] > 0
    assert result["threshold_pct"] == 2.0
    assert result["threshold_source"] == "model"
    assert result["rounds_done"] == 2
    assert [item["first_arm"] for item in result["rounds"]] == ["base", "head"]  # A B, then B A
    first = result["rounds"][0]
    assert first["usable"] is True
    assert first["ratio_pct"] == pytest.approx(100.0 * (first["head_ms"] / first["base_ms"] - 1.0))
    assert first["base"]["run_id"] is not None
    assert first["head"]["job_state"] == "done"
    listed = client.get("/api/v1/comparisons?pr_number=43601").json()
    assert [item["id"] for item in listed] == [comparison["id"]]
    assert "rounds" not in listed[0]["results"][0]
    assert client.get("/api/v1/comparisons?state=done").json()[0]["id"] == comparison["id"]
    assert client.get("/api/v1/comparisons?pr_number=1").json() == []
    again = client.post(f"/api/v1/comparisons/{comparison['id']}/cancel", headers=auth(admin_token))
    assert again.status_code == 409


def test_a_comparison_job_runs_the_comparisons_requests_per_round(
    client: TestClient, admin_token: str, runner_token: str
) -> None:
    body = {**COMPARE, "requests_per_round": 3}
    created = client.post("/api/v1/comparisons", json=body, headers=auth(admin_token))
    assert created.status_code == 201, created.text
    assert created.json()["requests_per_round"] == 3
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=auth(runner_token)).status_code == 200
    claimed = client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token))
    assert claimed.status_code == 200
    spec = claimed.json()
    rounds = created.json()["results"][0]["rounds"]
    arms = {item[arm]["job_id"] for item in rounds for arm in ("base", "head")}
    assert spec["job_id"] in arms
    assert spec["case"]["requests"] == 3  # the case itself asks for 1


def test_cancel(client: TestClient, admin_token: str) -> None:
    comparison = client.post("/api/v1/comparisons", json=COMPARE, headers=auth(admin_token)).json()
    cancelled = client.post(f"/api/v1/comparisons/{comparison['id']}/cancel", headers=auth(admin_token))
    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["state"] == "cancelled"
    states = {item[arm]["job_state"] for item in body["results"][0]["rounds"] for arm in ("base", "head")}
    assert states == {"cancelled"}
    assert body["results"][0]["note"].startswith("cancelled after 0 of 2 rounds (cancelled by test-admin)")


def test_calibration_cycle(client: TestClient, admin_token: str, runner_token: str) -> None:
    created = client.post("/api/v1/calibrations", json=CALIBRATE, headers=auth(admin_token))
    assert created.status_code == 201, created.text
    comparison = created.json()
    assert comparison["base"] == comparison["head"]
    assert comparison["max_rounds"] == 8  # only if a round is interfered with
    assert client.get("/api/v1/calibrations").json() == []
    drive(client, runner_token, comparison, {"base": 263.7, "head": 263.7})
    (calibration,) = client.get(f"/api/v1/calibrations?case={CASE}&hardware=H200").json()
    assert calibration["comparison_id"] == comparison["id"]
    assert calibration["rounds"] == 2
    assert set(calibration["mde_pct"]) == {"2"}
    assert calibration["threshold_pct"] == 2.0
    order = calibration["order_effect"]
    assert order["ci_low_pct"] <= order["change_pct"] <= order["ci_high_pct"]
    assert order["text"].startswith("second run ")
    assert order["summary"].startswith("The second run of a round was ")
    (result,) = client.get(f"/api/v1/comparisons/{comparison['id']}").json()["results"]
    assert result["order_effect"] == order
    assert client.get("/api/v1/calibrations?hardware=GB300").json() == []


def test_cli_compare_prints_the_table_and_waits(
    client: TestClient, admin_token: str, runner_token: str
) -> None:
    client.headers.update(auth(admin_token))
    output = io.StringIO()
    console = Console(file=output, width=200, force_terminal=False)
    body = {"base": {"sha": "669a9bd", "patches": []}, "head": {"sha": "669a9bd", "patches": ["#43601"]}}
    tracker = TrackerHttp(client, retry=CLI_RETRY)
    created = run_compare(tracker, {**body, "cases": [CASE]}, wait=False, poll_interval_s=0, console=console)
    assert created["state"] == "pending"
    assert "669a9bd → 669a9bd + #43601" in output.getvalue()
    assert "pending" in output.getvalue()
    client.post(f"/api/v1/comparisons/{created['id']}/cancel")

    polls: list[float] = []

    def run_the_queue(seconds: float) -> None:
        polls.append(seconds)
        comparison = client.get(f"/api/v1/comparisons/{created['id'] + 1}").json()
        drive(client, runner_token, comparison, {"base": 263.7, "head": 287.6})

    finished = run_compare(
        tracker, {**body, "cases": [CASE]}, wait=True, poll_interval_s=5, console=console, sleep=run_the_queue
    )
    assert finished["state"] == "done"
    assert polls == [5]
    text = output.getvalue()
    assert "regression" in text
    assert "2 % (model)" in text


def test_cli_compare_errors_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFTRACK_SERVER_URL", raising=False)
    monkeypatch.delenv("PERFTRACK_TOKEN", raising=False)
    get_settings.cache_clear()
    runner = CliRunner()
    common = ["compare", "--base", "669a9bd", "--head", "669a9bd+#43601", "--case", CASE]
    try:
        missing = runner.invoke(app, [*common, "--server", "http://127.0.0.1:9"])
        assert missing.exit_code == 1
        assert "an admin token is needed" in missing.output
        bad = runner.invoke(
            app,
            [*common[:2], "669a9bd++", *common[3:], "--server", "http://127.0.0.1:9", "--token", "pt_x"],
        )
        assert bad.exit_code == 1
        assert "is not SHA[+PATCH...]" in bad.output
        unreachable = runner.invoke(app, [*common, "--server", "http://127.0.0.1:9", "--token", "pt_x"])
        assert unreachable.exit_code == 1
        assert "cannot reach http://127.0.0.1:9" in unreachable.output
    finally:
        get_settings.cache_clear()
