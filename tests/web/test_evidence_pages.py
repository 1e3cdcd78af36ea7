"""Evidence where people read it: the alert's ``diagnosis`` gains ``graph_break`` and ``operator``
findings once the culprit's evidence runs are stored; the run page says what the run is evidence
for and lists its files, and a trace downloads as the gzipped Chrome trace it is."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.diagnosis_runs import BAD_LOG, GRAPH_BREAK_FACTOR, WHOLE_GRAPH, Shape, history
from tests.tracker.evidence_runs import EVIDENCE, TRACE_NAME, drain
from tracker.models import Alert, Arm, BisectionState, EvidenceJob, Run
from tracker.workflows.evidence import queue_culprit_evidence


def alert_with_evidence(session: Session) -> tuple[Alert, dict[Arm, Run]]:
    good = Shape(compile=WHOLE_GRAPH)
    broken = Shape(steady=GRAPH_BREAK_FACTOR, compile={**WHOLE_GRAPH, "graph_breaks": 3}, log=BAD_LOG)
    history(session, [good, good, broken])
    alert = session.scalars(select(Alert)).one()
    alert.culprit_commit = alert.first_bad_commit  # adjacent commits: the first bad one is the culprit
    alert.bisection_state = BisectionState.NOT_NEEDED
    assert len(queue_culprit_evidence(session=session, alert=alert)) == 2
    drain(Bench(session), lambda commit, job: 263.7)
    runs = {
        link.side: session.get(Run, link.run_id)
        for link in session.scalars(select(EvidenceJob).where(EvidenceJob.alert_id == alert.id))
    }
    session.commit()
    return alert, {side: run for side, run in runs.items() if run is not None}


def test_the_alerts_diagnosis_gains_the_graph_break_and_the_operators(
    client: TestClient, session: Session
) -> None:
    alert, _ = alert_with_evidence(session)
    diagnosis = client.get(f"/api/v1/alerts/{alert.id}").json()["diagnosis"]
    kinds = [finding["kind"] for finding in diagnosis]
    assert kinds[:2] == ["compile", "graph_break"]  # the new break right after the counters
    assert "operator" in kinds
    assert diagnosis[1]["summary"].startswith("new graph break at toydit/norm.py:19: ")
    operator = next(finding for finding in diagnosis if finding["kind"] == "operator")
    assert " self time +" in operator["summary"]
    assert "ms/step" in operator["summary"]


def test_the_run_page_says_what_it_is_evidence_for_and_its_trace_downloads(
    client: TestClient, session: Session
) -> None:
    alert, runs = alert_with_evidence(session)
    culprit = runs[Arm.HEAD]
    html = client.get(f"/runs/{culprit.id}").text
    assert 'id="evidence"' in html
    assert f'href="/alerts/{alert.id}"' in html
    assert "the culprit" in html
    assert "Excluded from detection" in html
    link = f"/runs/{culprit.id}/files/{TRACE_NAME}"
    assert f'href="{link}"' in html
    answer = client.get(link)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/gzip"
    assert answer.headers["content-disposition"] == f'attachment; filename="{TRACE_NAME}"'
    assert answer.content == (EVIDENCE / "toy_culprit.trace.json.gz").read_bytes()
    assert "the commit before the culprit" in client.get(f"/runs/{runs[Arm.BASE].id}").text
    assert client.get(f"/runs/{culprit.id}/files/nothing.json.gz").status_code == 404
