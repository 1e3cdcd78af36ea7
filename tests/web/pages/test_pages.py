"""Server-rendered pages from real data: overview, series with changes, run detail, errors."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.views.test_series import _fill, recorded_sql


def _import(client: TestClient, token: str, title: str | None = None) -> list[int]:
    ids = []
    for body in regression_payloads(title):
        response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 201, response.text
        ids.append(response.json()["run_id"])
    return ids


def _cells(html: str, row_attr: str) -> list[str]:
    row = re.search(rf"<tr[^>]*{row_attr}[^>]*>(.*?)</tr>", html, re.S)
    assert row, f"no row with {row_attr}"
    return [
        re.sub(r"<[^>]+>", " ", cell).split() and " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    ]


def test_overview_lists_every_case_even_before_runs(client: TestClient) -> None:
    html = client.get("/").text
    assert "No runs yet" in html
    for slug in (
        "qwen-image-t2i-1024",
        "wan2.2-t2v-a14b",
        "hunyuanvideo-t2v-480p",
        "z-image-turbo-serve-gb300",
    ):
        assert f'data-case="{slug}"' in html


def test_series_page_shows_the_regression_and_the_fix(client: TestClient, runner_token: str) -> None:
    ids = _import(client, runner_token)
    html = client.get("/series/qwen-image-t2i-1024/H200").text
    regression = _cells(html, f'data-run="{ids[1]}"')
    fix = _cells(html, f'data-run="{ids[2]}"')
    assert regression[0] == "4739f2e"
    assert "287.6 ms" in regression[3]
    assert regression[4] == "+9.1 %"
    assert fix[0] == "9c1d5e2"
    assert "258.2 ms" in fix[3]
    assert fix[4] == "−10.2 %".replace("−", "-")
    assert 'class="num change regression"' in html
    assert 'class="num change improvement"' in html
    overview = client.get("/").text
    latest = _grid_cell(overview, 'data-case="qwen-image-t2i-1024" data-hardware="H200"')
    assert "258.2 ms" in latest
    assert "-6.3 %" in latest  # vs the median of the two runs before it (263.7, 287.6)
    assert "3 runs, no nightly" in latest
    assert latest.count("<polyline") == 1


def _grid_cell(html: str, attrs: str) -> str:
    cell = re.search(rf"<td[^>]*{attrs}[^>]*>(.*?)</td>", html, re.S)
    assert cell, f"no cell with {attrs}"
    return " ".join(cell.group(1).split())


def test_overview_filters_live_in_the_query_string(client: TestClient, runner_token: str) -> None:
    _import(client, runner_token)
    html = client.get("/?hardware=H200&model=qwen-image").text
    assert 'data-case="qwen-image-t2i-1024" data-hardware="H200"' in html
    assert 'data-hardware="GB300"' not in html
    assert '<option value="qwen-image" selected>' in html
    assert "Clear filters" in html
    empty = client.get("/?suite=no-such-suite").text
    assert "No series match these filters" in empty


def test_series_page_has_chart_range_and_patched_candidates(client: TestClient, runner_token: str) -> None:
    _import(client, runner_token)
    html = client.get("/series/qwen-image-t2i-1024/H200?metric=e2e_ms&limit=30").text
    assert 'data-src="/api/v1/series/qwen-image-t2i-1024/H200/chart?metric=e2e_ms&amp;limit=30"' in html
    assert '<a href="?metric=e2e_ms&amp;limit=30" class="on" aria-current="true">30</a>' in html
    assert '<input type="hidden" name="limit" value="30">' in html
    assert "/vendor/plotly.min.js" in html
    assert "Candidates with patches" not in html  # none measured yet


def test_series_metric_switch_and_bad_metric(client: TestClient, runner_token: str) -> None:
    _import(client, runner_token)
    html = client.get("/series/qwen-image-t2i-1024/H200?metric=denoise_stage_ms").text
    assert "14384 ms" in html.replace(",", "")
    response = client.get("/series/qwen-image-t2i-1024/H200?metric=nope")
    assert response.status_code == 422
    assert "text/html" in response.headers["content-type"]
    assert "unknown metric" in response.text


def test_run_page_shows_stages_warnings_and_log(client: TestClient, runner_token: str) -> None:
    run_id = _import(client, runner_token)[1]
    html = client.get(f"/runs/{run_id}").text
    assert "DenoisingStage" in html
    assert "DecodingStage" in html
    assert "287.6 ms" in html
    assert "Warmup req processed" in html  # the stored raw log
    assert "per-step times unknown" in html


def test_titles_are_escaped(client: TestClient, runner_token: str) -> None:
    _import(client, runner_token, title='<script>alert("x")</script><img src=x onerror=alert(1)>')
    html = client.get("/series/qwen-image-t2i-1024/H200").text
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(" in html


def test_missing_things_are_404_pages(client: TestClient) -> None:
    response = client.get("/runs/999999")
    assert response.status_code == 404
    assert "no run 999999" in response.text
    assert "text/html" in response.headers["content-type"]
    response = client.get("/series/no-such-case/H200")
    assert response.status_code == 404
    response = client.get("/api/v1/runs/999999")
    assert response.status_code == 404
    assert response.json() == {"detail": "no run 999999"}


def test_read_api(client: TestClient, runner_token: str) -> None:
    ids = _import(client, runner_token)
    cases = client.get("/api/v1/cases").json()
    assert {case["slug"] for case in cases} >= {"qwen-image-t2i-1024", "wan2.1-t2v-1.3b"}
    qwen = client.get("/api/v1/cases/qwen-image-t2i-1024").json()
    assert qwen["hardware"] == [{"name": "H200", "threshold_pct": 2.0, "confirmation_max_rounds": 16}]
    assert client.get("/api/v1/cases/nope").status_code == 404
    assert {kind["name"] for kind in client.get("/api/v1/hardware").json()} >= {"H200", "GB300"}
    series = client.get("/api/v1/series/qwen-image-t2i-1024/H200").json()
    assert [point["run_id"] for point in series["points"]] == ids
    assert [point["commit"]["sha"] for point in series["points"]] == ["669a9bd", "4739f2e", "9c1d5e2"]
    assert series["points"][0]["value"] == 263.7
    limited = client.get("/api/v1/series/qwen-image-t2i-1024/H200?limit=2").json()
    assert [point["run_id"] for point in limited["points"]] == ids[1:]
    assert limited["total_runs"] == 3
    assert client.get("/api/v1/series/qwen-image-t2i-1024/H200?limit=0").status_code == 422
    health = client.get("/healthz").json()
    assert health["status"] == "ok"
    assert health["database"] == "ok"
    assert "/api/v1/results" in client.get("/openapi.json").json()["paths"]


def test_overview_page_query_count_does_not_grow_with_runs(client: TestClient, session: Session) -> None:
    _fill(session, 3)
    session.flush()
    with recorded_sql(session) as few:
        assert client.get("/").status_code == 200
    _fill(session, 30)  # the first three are the same uploads: stored once
    _fill(session, 8, case="flux1-dev-serve-gb300")
    session.flush()
    with recorded_sql(session) as many:
        assert client.get("/").status_code == 200
    assert len(many) == len(few) > 3
