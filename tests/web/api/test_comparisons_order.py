"""The order of the arms over HTTP: each round carries the arm that ran first, and an A/A
calibration whose second runs were 3 % faster says so, in the comparison (detail and list) and in
``/calibrations``, driven through the runner endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

CASE = "qwen-image-t2i-1024"
RUNNER = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def drive_second_faster(client: TestClient, token: str, comparison_id: int, effect_pct: float) -> None:
    """Run every queued job as a runner would: 30 ms, the second run of each round ``effect_pct`` off."""
    assert client.post("/api/v1/runners", json=RUNNER, headers=auth(token)).status_code == 200
    done: set[tuple[int, str]] = set()
    for _ in range(100):
        claimed = client.post("/api/v1/runners/h200-1/claim", headers=auth(token))
        if claimed.status_code == 204:
            return
        spec = claimed.json()
        detail = client.get(f"/api/v1/comparisons/{comparison_id}").json()
        arms = {
            item[arm]["job_id"]: (item["round"], arm)
            for item in detail["results"][0]["rounds"]
            for arm in ("base", "head")
        }
        round_number, arm = arms[spec["job_id"]]
        second = (round_number, "head" if arm == "base" else "base") in done
        value = 30.0 * (1.0 + effect_pct / 100.0 if second else 1.0) * (1.0 + 0.001 * (round_number % 3))
        upload = {"attempt": spec["attempt"], "status": "ok", "step_times_ms": [value] * 3}
        stored = client.post(
            f"/api/v1/jobs/{spec['job_id']}/result?runner=h200-1", json=upload, headers=auth(token)
        )
        assert stored.status_code == 201, stored.text
        done.add((round_number, arm))
    raise AssertionError("the queue never drained")


def test_a_calibration_reports_which_arm_ran_first_and_the_order_effect(
    client: TestClient, admin_token: str, runner_token: str
) -> None:
    body: dict[str, Any] = {"candidate": {"sha": "669a9bd"}, "cases": [CASE], "rounds": 4}
    created = client.post("/api/v1/calibrations", json=body, headers=auth(admin_token))
    assert created.status_code == 201, created.text
    comparison_id = created.json()["id"]
    drive_second_faster(client, runner_token, comparison_id, -3.0)
    detail = client.get(f"/api/v1/comparisons/{comparison_id}").json()
    assert detail["state"] == "done"
    (result,) = detail["results"]
    assert [item["first_arm"] for item in result["rounds"]] == ["base", "head", "base", "head"]
    order = result["order_effect"]
    assert order["change_pct"] == pytest.approx(-3.0, abs=0.2)
    assert order["ci_high_pct"] < 0
    assert order["text"] == (
        f"second run {order['change_pct']:+.1f} % [{order['ci_low_pct']:+.1f}, {order['ci_high_pct']:+.1f}]"
    )
    assert order["summary"].startswith(
        "The second run of a round was 3.0 % faster, more than the 2 % threshold"
    )
    assert abs(result["change_pct"]) < 0.5  # head vs base: the alternating order cancelled it
    (calibration,) = client.get(f"/api/v1/calibrations?case={CASE}").json()
    assert calibration["order_effect"] == order
    (listed,) = client.get("/api/v1/comparisons").json()
    assert listed["results"][0]["order_effect"] == order
