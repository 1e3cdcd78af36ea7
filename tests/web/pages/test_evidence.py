"""Evidence where people read it: the alert's ``diagnosis`` gains ``graph_break`` and ``operator``
findings once the culprit's evidence runs are stored; the run page says what the run is evidence
for and lists its files (and, until the run is read after its upload, that it is being read), and a
trace downloads as the gzipped Chrome trace it is; the upload route reads the run after its answer."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from tests.tracker.bench import Bench
from tests.tracker.evidence_runs import EVIDENCE, TRACE_NAME, drain, evidence_upload
from tests.tracker.workflows.test_evidence_reading import culprit_alert, upload_both
from tracker.enums import Arm
from tracker.models import Alert, EvidenceJob, Run
from tracker.workflows.evidence_reading import summarize_pending


def alert_with_evidence(session: Session) -> tuple[Alert, dict[Arm, Run]]:
    alert = culprit_alert(session)
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


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_upload_route_reads_an_evidence_run_after_its_answer(
    client: TestClient, session: Session, runner_token: str
) -> None:
    alert = culprit_alert(session)
    session.commit()
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=auth(runner_token)).status_code == 200
    for _ in range(2):
        spec = client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token)).json()
        assert spec["reason"] == "evidence"
        side = session.scalars(select(EvidenceJob.side).where(EvidenceJob.job_id == spec["job_id"])).one()
        body = evidence_upload(spec["attempt"], side).model_dump(mode="json", exclude_none=True)
        stored = client.post(f"/api/v1/jobs/{spec['job_id']}/result", json=body, headers=auth(runner_token))
        assert stored.status_code == 201, stored.text
    # The test client runs the follow-ups before it returns: both runs are read by now.
    session.expire_all()
    links = session.scalars(select(EvidenceJob).where(EvidenceJob.alert_id == alert.id)).all()
    assert len(links) == 2
    assert all(link.summarized_at is not None and link.summary is not None for link in links)
    kinds = [finding["kind"] for finding in client.get(f"/api/v1/alerts/{alert.id}").json()["diagnosis"]]
    assert "graph_break" in kinds


def test_the_run_page_says_an_evidence_run_is_being_read_until_it_is(
    client: TestClient, session: Session, sessions: sessionmaker[Session]
) -> None:
    culprit_alert(session)
    links = upload_both(Bench(session))
    session.commit()
    page = f"/runs/{links[Arm.HEAD].run_id}"
    assert 'id="evidence-pending"' in client.get(page).text
    assert summarize_pending(sessions=sessions) == 2  # what the scheduler does for what is left
    html = client.get(page).text
    assert 'id="evidence"' in html
    assert 'id="evidence-pending"' not in html
