"""A runner's labels are bounded in number, size and characters (422 naming them), and the fleet page
shows the ones it takes whole and escaped."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from wire.limits import MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_RUNNER_LABELS


def _register(client: TestClient, token: str, labels: Any) -> Any:
    body = {"name": "h200-1", "hardware": "H200", "gpu_count": 8, "labels": labels}
    return client.post("/api/v1/runners", json=body, headers={"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize(
    "labels",
    [
        {"rack": "x" * 1_000_000},
        {"rack": "x" * (MAX_LABEL_VALUE + 1)},
        {"k" * (MAX_LABEL_KEY + 1): "v"},
        {f"k{index}": "v" for index in range(MAX_RUNNER_LABELS + 1)},
        {"rack=a": "v"},
        {"two words": "v"},
        {"rack": "a\r\nb"},
    ],
)
def test_oversized_or_odd_labels_are_refused(client: TestClient, runner_token: str, labels: Any) -> None:
    answer = _register(client, runner_token, labels)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith("labels")
    assert "h200-1" not in client.get("/runners").text  # nothing registered


def test_labels_within_the_bounds_are_shown_whole_and_escaped(client: TestClient, runner_token: str) -> None:
    labels = {f"k{index}": "v" for index in range(MAX_RUNNER_LABELS - 3)}
    labels["<i>k</i>"] = "v"
    labels["rack"] = "<b>" + "x" * (MAX_LABEL_VALUE - 7) + "</b>"
    labels["topology.kubernetes.io/zone"] = "eu-west-1a"
    answer = _register(client, runner_token, labels)
    assert answer.status_code == 200, answer.text
    assert answer.json()["labels"] == labels
    page = client.get("/runners").text
    assert f"rack=&lt;b&gt;{'x' * (MAX_LABEL_VALUE - 7)}&lt;/b&gt;" in page
    assert "topology.kubernetes.io/zone=eu-west-1a" in page
    assert "&lt;i&gt;k&lt;/i&gt;=v" in page
    assert "<b>x" not in page
    assert "<i>k" not in page
