"""/api/v1/nightly and /nightly: the latest runs per schedule, what failed and what changed."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from perftrack.cli import app as cli_app
from tests.conftest import SUITES
from tests.factories import regression_payloads
from tests.waiting import wait_until
from tracker import db
from tracker.catalog.suites import ResolvedSchedule
from tracker.enums import JobState
from tracker.models import Job, NightlyRun, apscheduler_jobs
from tracker.scheduling.leader import PostgresLeader, make_leader
from tracker.scheduling.nightly import fire_nightly
from tracker.settings import Settings, get_settings
from tracker.vcs.branch_head import BranchUnavailable
from web.app import create_app

HEAD = "c0ffee" + "0" * 34
EARLIER = dt.datetime(2026, 1, 1, 18, 0, tzinfo=dt.UTC)


def _schedule(name: str, branch: str = "main") -> ResolvedSchedule:
    return ResolvedSchedule(
        name=name,
        suite="sglang-diffusion",
        repository="sglang",
        cron="0 2 * * *",
        timezone="Asia/Shanghai",
        branch=branch,
        hardware=["H200", "GB300"],
        backfill_limit=0,
    )


def _resolver(_url: str, branch: str) -> str:
    if branch != "main":
        raise BranchUnavailable(f"branch {branch!r} not found in <script>alert(1)</script>")
    return HEAD


@pytest.fixture
def nightly(session: Session) -> NightlyRun:
    """A nightly that queued seven jobs (one failed since), and one whose branch is gone."""
    run = fire_nightly(
        session=session, schedule=_schedule("sglang-nightly"), now=EARLIER, history=None, resolver=_resolver
    )
    failed = next(job for job in run_jobs(session) if job.case.slug == "qwen-image-t2i-1024")
    failed.state = JobState.FAILED
    failed.failure_reason = "OOM <b>on</b> step 3"
    fire_nightly(
        session=session,
        schedule=_schedule("release-nightly", branch="gone"),
        now=EARLIER,
        history=None,
        resolver=_resolver,
    )
    session.commit()
    return run


def run_jobs(session: Session) -> list[Job]:
    return list(session.scalars(select(Job).order_by(Job.id)))


def test_empty(client: TestClient) -> None:
    assert client.get("/api/v1/nightly").json() == []
    page = client.get("/nightly")
    assert page.status_code == 200
    assert "No nightly run yet" in page.text


def test_latest_runs_per_schedule(client: TestClient, nightly: NightlyRun, runner_token: str) -> None:
    for body in regression_payloads():
        response = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert response.status_code == 201
    schedules = client.get("/api/v1/nightly").json()
    assert [entry["schedule"] for entry in schedules] == ["release-nightly", "sglang-nightly"]
    [broken] = schedules[0]["runs"]
    assert broken["ok"] is False
    assert broken["commit_sha"] is None
    assert "not found" in broken["error"]
    [run] = schedules[1]["runs"]
    assert run["commit_sha"] == HEAD
    assert run["commit_url"] == f"/commits/{HEAD}"
    assert (run["jobs_queued"], run["jobs_existing"], run["branch"]) == (7, 0, "main")
    assert run["jobs_by_state"] == {"queued": 6, "failed": 1}
    assert run["ok"] is False
    [failed] = run["failed_jobs"]
    assert failed["case"] == "qwen-image-t2i-1024"
    assert failed["hardware"] == "H200"
    assert failed["url"] == f"/jobs?id={failed['job_id']}"
    [alert] = run["alerts"]  # the regression imported after the nightly fired
    assert alert["case"] == "qwen-image-t2i-1024"
    assert alert["direction"] == "regression"
    assert alert["url"] == f"/alerts/{alert['id']}"
    assert client.get("/api/v1/nightly", params={"runs": 0}).status_code == 422


def test_page_shows_runs_and_escapes_everything(client: TestClient, nightly: NightlyRun) -> None:
    page = client.get("/nightly")
    assert page.status_code == 200
    text = page.text
    assert 'data-schedule="sglang-nightly"' in text
    assert 'data-schedule="release-nightly"' in text
    assert f'href="/commits/{HEAD}"' in text
    assert "OOM &lt;b&gt;on&lt;/b&gt; step 3" in text
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "7 queued" in text


def test_app_runs_the_scheduler_when_enabled(migrated_db_url: str, tmp_path: Path) -> None:
    settings = Settings(
        database_url=migrated_db_url,
        data_dir=tmp_path,
        suite_dir=SUITES,
        environment="test",
        scheduler_enabled=True,
    )
    url = settings.effective_database_url
    engine = db.make_engine(url)
    try:
        with TestClient(create_app(settings, engine)):

            def stored() -> list[str]:
                with engine.connect() as connection:
                    return list(connection.scalars(select(apscheduler_jobs.c.id)))

            assert wait_until(stored, 30, "the nightly in the job store") == ["sglang-nightly"]
            contender = make_leader(url, data_dir=tmp_path)
            assert not contender.acquire()  # the app's scheduler leads
        assert contender.acquire()  # shutdown gave leadership up
        contender.release()
        if isinstance(contender, PostgresLeader):
            contender.dispose()
    finally:
        engine.dispose()


def test_scheduler_once_fires_every_schedule(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for args in (
        ["init", "--quiet", "--initial-branch=main"],
        ["commit", "--allow-empty", "-q", "-m", "one"],
    ):
        subprocess.run(
            [
                "git",
                "-c",
                "user.name=Owl",
                "-c",
                "user.email=owl@example.invalid",
                "-C",
                str(upstream),
                *args,
            ],
            check=True,
            capture_output=True,
        )
    suites = tmp_path / "suites"
    suites.mkdir()
    suite_text = (SUITES / "sglang-diffusion.toml").read_text()
    (suites / "sglang-diffusion.toml").write_text(
        suite_text.replace("https://github.com/sgl-project/sglang.git", str(upstream))
    )
    monkeypatch.setenv("PERFTRACK_DATABASE_URL", migrated_db_url)
    monkeypatch.setenv("PERFTRACK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PERFTRACK_SUITE_DIR", str(suites))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli_app, ["scheduler", "--once"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "sglang-nightly: main at " in result.output
    assert "7 job(s) queued" in result.output
