"""Say why, where people read it: ``diagnosis`` in GET /api/v1/alerts/{id} and in a comparison's
results, the alert page's "Why" (escaped), the comparison page, the PR comment and the nightly."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from tests.factories import result_body
from tests.tracker.bench import LIMITS
from tests.tracker.comparisons.test_comparisons import compare, runner
from tests.tracker.diagnosis_runs import (
    BAD_LOG,
    CASE,
    GRAPH_BREAK_FACTOR,
    WHOLE_GRAPH,
    Shape,
    history,
    job_upload,
)
from tracker.comparisons.summary import comparison_view
from tracker.diagnosis.loading import comparison_diagnoses
from tracker.enums import Arm
from tracker.github.render import render_comment
from tracker.models import Alert, NightlyRun
from tracker.scheduling.report import render_nightly
from tracker.scheduling.summary import nightly_summary
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result, store_result
from wire import ResultIn

HOSTILE_STAGE = "<script>window.pwned=1</script>Stage"
BROKEN = Shape(steady=GRAPH_BREAK_FACTOR, compile={**WHOLE_GRAPH, "graph_breaks": 3}, log=BAD_LOG)


def graph_break_alert(session: Session) -> Alert:
    history(session, [Shape(compile=WHOLE_GRAPH), Shape(compile=WHOLE_GRAPH), BROKEN])
    return session.scalars(select(Alert)).one()


def test_an_alert_says_why_in_the_api(client: TestClient, session: Session) -> None:
    alert = graph_break_alert(session)
    detail = client.get(f"/api/v1/alerts/{alert.id}").json()
    assert [finding["kind"] for finding in detail["diagnosis"]] == ["compile", "warmup", "stage"]
    compiled = detail["diagnosis"][0]
    assert compiled["summary"] == "graph breaks rose 0 → 3 per run"
    assert compiled["detail"]["graph_breaks"]["after"] == 3.0
    assert detail["diagnosis"][1]["summary"].startswith("steady-state step +")
    [listed] = client.get("/api/v1/alerts").json()
    assert listed["diagnosis"] == detail["diagnosis"]
    [bare] = client.get("/api/v1/alerts", params={"diagnosis": "false"}).json()
    assert bare["diagnosis"] == []


def test_the_alert_list_reads_diagnoses_with_a_fixed_number_of_queries(
    client: TestClient, session: Session
) -> None:
    good = Shape(compile=WHOLE_GRAPH)
    history(session, [good, good, BROKEN])
    engine = session.get_bind()

    def statements_of_list() -> tuple[list[dict[str, Any]], int]:
        seen: list[str] = []

        def count(*args: Any) -> None:
            seen.append(args[2])

        event.listen(engine, "before_cursor_execute", count)
        try:
            listed = client.get("/api/v1/alerts").json()
        finally:
            event.remove(engine, "before_cursor_execute", count)
        return listed, len(seen)

    listed, one = statements_of_list()
    assert len(listed) == 1
    history(session, [good, good, BROKEN], case="wan2.2-t2v-a14b")
    listed, two = statements_of_list()
    assert {alert["case"] for alert in listed} == {CASE, "wan2.2-t2v-a14b"}
    assert all(alert["diagnosis"][0]["summary"] == "graph breaks rose 0 → 3 per run" for alert in listed)
    assert two == one


def test_the_alert_page_shows_why_escaped(client: TestClient, session: Session) -> None:
    for index, (stage_ms, step_ms) in enumerate([(100.0, 263.7), (100.0, 263.7), (300.0, 287.6)]):
        body = result_body(
            commit={
                "sha": f"{index:07x}" + "e" * 33,
                "title": f"commit {index}",
                "committed_at": (
                    dt.datetime(2026, 5, 1, tzinfo=dt.UTC) + dt.timedelta(days=index)
                ).isoformat(),
            },
            step_times_ms=[step_ms] * 5,
            stages=[
                {"name": HOSTILE_STAGE, "duration_ms": stage_ms},
                {"name": "DenoisingStage", "duration_ms": step_ms * 5},
            ],
        )
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    alert = session.scalars(select(Alert)).one()
    html = client.get(f"/alerts/{alert.id}").text
    assert '<section class="card" id="why">' in html
    assert "<h2>Why</h2>" in html
    assert "<script>window.pwned" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;Stage +200 % (100.0 ms → 300.0 ms)" in html
    assert 'data-kind="stage"' in html


def _single_runs(session: Session, steps_ms: list[float], **fields: object) -> Alert:
    for index, step_ms in enumerate(steps_ms):
        body = result_body(
            commit={
                "sha": f"{index:07x}" + "f" * 33,
                "committed_at": (
                    dt.datetime(2026, 5, 1, tzinfo=dt.UTC) + dt.timedelta(days=index)
                ).isoformat(),
            },
            step_times_ms=[step_ms] * 5,
            stages=[],
        )
        body.update(fields)
        if not body["step_times_ms"]:
            body["denoise_step_mean_ms"] = step_ms
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    return session.scalars(select(Alert)).one()


def test_an_alert_whose_every_step_slowed_alike_says_so(client: TestClient, session: Session) -> None:
    alert = _single_runs(session, [263.7, 263.7, 287.6])
    [finding] = client.get(f"/api/v1/alerts/{alert.id}").json()["diagnosis"]
    assert finding["kind"] == "warmup"
    assert finding["summary"] == (
        "steady-state step +9.1 % (263.7 ms → 287.6 ms), step 0 +9.1 %: a cost paid on every step"
    )


def test_an_alert_whose_runs_recorded_nothing_else_says_nothing_differs(
    client: TestClient, session: Session
) -> None:
    alert = _single_runs(session, [263.7, 263.7, 287.6], step_times_ms=[])  # the log's average only
    assert client.get(f"/api/v1/alerts/{alert.id}").json()["diagnosis"] == []
    html = client.get(f"/alerts/{alert.id}").text
    assert "Nothing else the runs recorded" in html


def run_comparison(session: Session, base: Shape, head: Shape) -> int:
    comparison = compare(session)
    agent = runner(session)
    rng = random.Random(4)
    now = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
    for _ in range(100):
        job = workflow_jobs.claim(session=session, runner=agent, now=now)
        if job is None:
            return comparison.id
        upload = job_upload(head if job.arm is Arm.HEAD else base, attempt=job.attempts, rng=rng)
        store_job_result(session=session, runner=agent, job_id=job.id, result=upload, limits=LIMITS, now=now)
    raise AssertionError("the comparison never finished")


def test_a_comparison_says_why_in_the_api_the_page_and_the_pr_comment(
    client: TestClient, session: Session
) -> None:
    comparison_id = run_comparison(session, Shape(compile=WHOLE_GRAPH), BROKEN)
    [result] = client.get(f"/api/v1/comparisons/{comparison_id}").json()["results"]
    assert result["verdict"] == "regression"
    assert [finding["kind"] for finding in result["diagnosis"]] == ["compile", "warmup", "stage"]
    assert result["diagnosis"][0]["summary"] == "graph breaks rose 0 → 3 per run"

    html = client.get(f"/comparisons/{comparison_id}").text
    assert f'<div class="why" data-case="{CASE}">' in html
    assert "graph breaks rose 0 → 3 per run" in html

    view = comparison_view(session=session, comparison_id=comparison_id)
    comment = render_comment(
        view, public_url=None, diagnoses=comparison_diagnoses(session=session, view=view)
    )
    [why] = [line for line in comment.splitlines() if line.startswith("- Why")]
    assert why.startswith(f"- Why `{CASE}`: graph breaks rose 0 → 3 per run · steady-state step +")
    assert "DenoisingStage" not in why  # the first two findings only
    assert "- Why" not in render_comment(view, public_url=None)  # nothing computed, nothing shown


def test_a_comparison_without_a_change_has_no_why_in_the_comment(session: Session) -> None:
    same = Shape(compile=WHOLE_GRAPH)
    comparison_id = run_comparison(session, same, same)
    view = comparison_view(session=session, comparison_id=comparison_id)
    assert view.results[0].result.verdict.value == "no_change"
    diagnoses = comparison_diagnoses(session=session, view=view)
    assert "- Why" not in render_comment(view, public_url=None, diagnoses=diagnoses)


def test_the_nightly_summary_says_why_each_alert_changed(client: TestClient, session: Session) -> None:
    alert = graph_break_alert(session)
    session.add(NightlyRun(schedule="main", fired_at=alert.created_at - dt.timedelta(hours=1), backfilled=[]))
    session.flush()
    [summary] = nightly_summary(session=session)
    [view] = summary.runs
    assert view.diagnoses[alert.id][0].summary == "graph breaks rose 0 → 3 per run"
    assert "  - why: graph breaks rose 0 → 3 per run" in render_nightly(view, public_url=None).splitlines()
    [schedule] = client.get("/api/v1/nightly").json()
    [listed] = schedule["runs"][0]["alerts"]
    assert listed["diagnosis"][0]["kind"] == "compile"
    assert "why: graph breaks rose 0 → 3 per run" in client.get("/nightly").text
