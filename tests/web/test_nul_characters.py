"""U+0000 anywhere in an upload (an older runner's binary log, a perf dump, the environment) is
stored as U+FFFD: PostgreSQL's text and JSONB refuse NUL, and a 500 would make runners retry for ever."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import result_body


def test_nul_characters_are_stored_as_replacement_characters(client: TestClient, runner_token: str) -> None:
    body = result_body(
        raw_log="[03-01 10:00:00] \x00\x00binary\x00 [DenoisingStage] finished in 13.1895 seconds\n",
        commit={"sha": "669a9bd", "title": "Fix \x00 norm", "committed_at": "2026-03-01T10:00:00Z"},
        failure_reason=None,
    )
    body.pop("failure_reason")
    response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"})
    assert response.status_code == 201, response.text
    run = client.get(f"/api/v1/runs/{response.json()['run_id']}").json()
    assert run["commit"]["title"] == "Fix \ufffd norm"
    log = client.get(run["log_url"]).text
    assert "\x00" not in log
    assert "\ufffd\ufffdbinary\ufffd" in log
