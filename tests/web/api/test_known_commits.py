"""A known commit is immutable to uploads: a later upload that disagrees is warned, not applied."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import result_body
from tracker.models import Commit

FIRST = {
    "sha": "669a9bd",
    "title": "Baseline",
    "author_name": "Jonas Weber",
    "committed_at": "2026-03-01T10:00:00Z",
    "parents": ["1111111"],
}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def stored(session: Session) -> Commit:
    session.expire_all()
    commit = session.scalar(select(Commit).where(Commit.sha.startswith("669a9bd")))
    assert commit is not None
    return commit


def test_an_upload_cannot_rewrite_a_known_commit(
    client: TestClient, session: Session, runner_token: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = client.post("/api/v1/results", json=result_body(commit=FIRST), headers=auth(runner_token))
    assert first.status_code == 201, first.text
    assert first.json()["warnings"] == []
    rewrite = {
        "sha": "669a9bd",
        "title": "Totally different",
        "author_name": "Mallory",
        "committed_at": "2030-01-01T00:00:00Z",
        "parents": ["2222222"],
    }
    body = result_body(commit=rewrite, step_times_ms=[250.0, 262.0, 263.0])
    with caplog.at_level(logging.WARNING, logger="tracker.vcs.commits"):
        second = client.post("/api/v1/results", json=body, headers=auth(runner_token))
    assert second.status_code == 201, second.text
    warnings = second.json()["warnings"]
    assert [w.split(":")[1].split()[0] for w in warnings] == [
        "committed_at",
        "title",
        "author_name",
        "parents",
    ]
    assert all(w.startswith("commit 669a9bd:") and "not applied" in w for w in warnings)
    assert runner_token not in caplog.text
    assert "'Totally different' was not applied" in caplog.text
    commit = stored(session)
    assert (commit.title, commit.author_name, commit.parents) == ("Baseline", "Jonas Weber", ["1111111"])
    assert commit.committed_at == dt.datetime(2026, 3, 1, 10, tzinfo=dt.UTC)


def test_an_upload_may_fill_in_what_the_tracker_does_not_know(
    client: TestClient, session: Session, runner_token: str
) -> None:
    bare = result_body(commit={"sha": "669a9bd"})
    assert client.post("/api/v1/results", json=bare, headers=auth(runner_token)).status_code == 201
    assert stored(session).committed_at_estimated
    richer = {**FIRST, "parents": ["1111111" + "f" * 33]}
    answer = client.post(
        "/api/v1/results", json=result_body(commit=richer, step_times_ms=[251.0]), headers=auth(runner_token)
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["warnings"] == []
    commit = stored(session)
    assert (commit.sha, commit.title, commit.author_name) == ("669a9bd", "Baseline", "Jonas Weber")
    assert commit.parents == ["1111111" + "f" * 33]
    assert not commit.committed_at_estimated
    # The same values again, abbreviated or not, are no disagreement.
    same = client.post(
        "/api/v1/results", json=result_body(commit=FIRST, step_times_ms=[252.0]), headers=auth(runner_token)
    )
    assert same.json()["warnings"] == []


def test_the_schema_documents_the_warnings(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["ResultCreated"]
    assert schema["properties"]["warnings"]["type"] == "array"
    assert schema["properties"]["warnings"]["items"] == {"type": "string"}
