"""GET /healthz reports the database, and says 503 when it cannot be reached (without leaking the URL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import SUITES
from tracker import db
from tracker.errors import PerftrackError
from tracker.settings import Settings
from web.app import create_app

pytestmark = pytest.mark.dialect


def test_health_ok(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["schema_revision"] == db.head_revision()


def test_unreachable_database_is_503_without_secrets(tmp_path: Path) -> None:
    settings = Settings(
        database_url="postgresql://perftrack:s3cret-password@127.0.0.1:1/perftrack",
        data_dir=tmp_path,
        suite_dir=SUITES,
    )
    with TestClient(create_app(settings, prepare=False)) as client:
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "unreachable"
    assert "s3cret" not in response.text


def test_serve_migrates_a_new_sqlite_database(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'new.db'}", data_dir=tmp_path, suite_dir=SUITES)
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").json()["schema_revision"] == db.head_revision()
        assert any(case["slug"] == "qwen-image-t2i-1024" for case in client.get("/api/v1/cases").json())


def test_postgres_is_never_migrated_implicitly(scratch_db_url: str, tmp_path: Path) -> None:
    if scratch_db_url.startswith("sqlite"):
        pytest.skip("SQLite databases are migrated by serve on purpose")
    app = create_app(Settings(database_url=scratch_db_url, data_dir=tmp_path, suite_dir=SUITES))
    with pytest.raises(PerftrackError, match="perftrack db upgrade"), TestClient(app):
        pass
