"""Run, commit, runners and jobs pages through the test client: status codes, 404s, escaping."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import regression_payloads

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _import(client: TestClient, token: str) -> list[int]:
    ids = []
    for body in regression_payloads(HOSTILE):
        response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 201, response.text
        ids.append(response.json()["run_id"])
    return ids


def test_commit_page_by_abbreviation_escapes_the_title(client: TestClient, runner_token: str) -> None:
    run_id = _import(client, runner_token)[0]
    sha = client.get(f"/api/v1/runs/{run_id}").json()["commit"]["sha"]
    response = client.get(f"/commits/{sha[:7]}")
    assert response.status_code == 200
    assert f'data-run="{run_id}"' in response.text
    assert "<script>alert" not in response.text
    assert "&lt;script&gt;alert(" in response.text


def test_commit_errors(client: TestClient) -> None:
    assert client.get("/commits/abcdef1").status_code == 404
    assert client.get("/commits/not-a-sha").status_code == 422


def test_run_log_is_escaped(client: TestClient, runner_token: str) -> None:
    run_id = _import(client, runner_token)[0]
    html = client.get(f"/runs/{run_id}").text
    assert 'class="ln stage"' in html
    assert "<script>alert" not in html


def test_runners_and_jobs_pages(client: TestClient) -> None:
    assert client.get("/runners").status_code == 200
    assert client.get("/jobs").status_code == 200
    assert client.get("/jobs?state=queued").status_code == 200
    assert client.get("/jobs?state=bogus").status_code == 422
    assert client.get("/jobs?hardware=NOPE").status_code == 422
    assert client.get("/jobs?id=999999").status_code == 404
