"""An abbreviated commit is completed from the repository only, never from an upload's claim.

A full sha that merely starts with a stored abbreviation proves nothing: any digits would do. Such
an upload is stored on the abbreviated commit with a warning, the row keeps its sha, and the
abbreviation keeps naming one commit, so the real full sha still resolves cleanly afterwards.
"""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.models import Commit

SHORT = "669a9bd"
CLAIMED = SHORT + "0" * 33
REAL = SHORT + "3c1e0f2a4b5d6c7e8f90a1b2c3d4e5f6a"
NOT_COMPLETED = (
    f"commit {SHORT}: sha is '{SHORT}' here; the upload's '{CLAIMED}' was not applied "
    "(an abbreviation is completed from the repository only)"
)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def shas(session: Session, prefix: str) -> list[str]:
    session.expire_all()
    return sorted(session.scalars(select(Commit.sha).where(Commit.sha.startswith(prefix))))


def upload(client: TestClient, token: str, sha: str, step: float) -> list[str]:
    """Import one result at ``sha``; the answer's warnings."""
    body = result_body(commit={"sha": sha}, step_times_ms=[250.0, step])
    answer = client.post("/api/v1/results", json=body, headers=auth(token))
    assert answer.status_code == 201, answer.text
    warnings: list[str] = answer.json()["warnings"]
    return warnings


def test_an_import_does_not_complete_an_abbreviated_commit(
    client: TestClient, session: Session, import_token: str
) -> None:
    upload(client, import_token, SHORT, 261.0)
    assert upload(client, import_token, CLAIMED, 262.0) == [NOT_COMPLETED]
    assert shas(session, SHORT) == [SHORT]
    # The real full sha, and the abbreviation again, still name the one commit.
    real = upload(client, import_token, REAL, 263.0)
    assert [line.split(":")[1].split()[0] for line in real] == ["sha"]
    upload(client, import_token, SHORT, 264.0)
    assert shas(session, SHORT) == [SHORT]
    runs = client.get("/api/v1/series/qwen-image-t2i-1024/H200").json()
    assert runs["total_runs"] == 4
    assert client.get(f"/commits/{SHORT}").status_code == 200
    assert client.get(f"/commits/{REAL}").status_code == 200


def test_a_job_result_does_not_complete_its_abbreviated_base(
    client: TestClient, session: Session, admin_token: str, runner_token: str, import_token: str
) -> None:
    enqueue = {"case": "qwen-image-t2i-1024", "hardware": "H200", "commit": {"sha": SHORT}}
    job_id = client.post("/api/v1/jobs", json=enqueue, headers=auth(admin_token)).json()["job"]["id"]
    runner = {"name": "h200-1", "hardware": "H200", "gpu_count": 8}
    assert client.post("/api/v1/runners", json=runner, headers=auth(runner_token)).status_code == 200
    claimed = client.post("/api/v1/runners/h200-1/claim", headers=auth(runner_token))
    assert claimed.json()["candidate"]["base_sha"] == SHORT
    result = {"attempt": 1, "status": "ok", "step_times_ms": [263.0, 264.0], "commit": {"sha": CLAIMED}}
    stored = client.post(
        f"/api/v1/jobs/{job_id}/result?runner=h200-1", json=result, headers=auth(runner_token)
    )
    assert stored.status_code == 201, stored.text
    assert stored.json()["warnings"] == [NOT_COMPLETED]
    assert shas(session, SHORT) == [SHORT]
    # An import of the real full sha lands on the job's commit: one row, no ambiguity.
    assert len(upload(client, import_token, REAL, 262.0)) == 1
    assert shas(session, SHORT) == [SHORT]
    assert client.get(f"/commits/{SHORT}").status_code == 200
