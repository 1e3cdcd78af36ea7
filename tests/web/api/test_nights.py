"""/api/v1/nights and /nights: the nights one by one, each saying what its nightly.summary
notification says (what ran, what changed, what is still open, what got fixed)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import regression_payloads
from tests.web.api.test_nightly import HEAD
from tests.web.api.test_nightly import nightly as nightly  # the fixture
from tracker.models import NightlyRun
from tracker.notifications.events import nightly_notice
from tracker.scheduling.summary import get_night
from tracker.settings import Settings
from web.app import create_app

FIRED = dt.datetime(2026, 6, 1, 2, tzinfo=dt.UTC)


def _upload_regression(client: TestClient, runner_token: str) -> None:
    for body in regression_payloads():
        answer = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert answer.status_code == 201, answer.text


def test_a_night_says_what_ran_changed_is_open_and_got_fixed(
    client: TestClient,
    session: Session,
    nightly: NightlyRun,
    runner_token: str,
) -> None:
    _upload_regression(client, runner_token)
    answer = client.get(f"/api/v1/nights/{nightly.id}")
    assert answer.status_code == 200, answer.text
    night = answer.json()
    assert night["run"]["commit_sha"] == HEAD
    assert night["run"]["jobs_by_state"] == {"queued": 6, "failed": 1}
    assert {"case": "qwen-image-t2i-1024", "hardware": "H200"} in night["measured"]
    assert len(night["measured"]) == 7
    [failed] = night["run"]["failed_jobs"]
    assert failed["reason"] == "OOM <b>on</b> step 3"
    [alert] = night["run"]["alerts"]
    assert alert["case"] == "qwen-image-t2i-1024"
    facts = get_night(session=session, run_id=nightly.id).facts()
    # the third log undoes the regression: fixed since the night before, and no longer open
    assert night["fixed"] == [{"id": alert["id"], "url": alert["url"], "line": facts.changed[0]}]
    assert facts.fixed == facts.changed
    assert night["open_alerts"] == facts.open_alerts
    page = client.get(f"/nights/{nightly.id}")
    assert page.status_code == 200
    text = page.text
    assert "OOM &lt;b&gt;on&lt;/b&gt; step 3" in text
    assert 'data-series="qwen-image-t2i-1024/H200"' in text
    assert f'<a href="/alerts/{alert["id"]}">{facts.changed[0]}</a>' in text
    assert f'data-open="{facts.open_alerts}"' in text
    assert text.count(f'<a href="/alerts/{alert["id"]}">{facts.changed[0]}</a>') == 2  # changed, fixed
    assert "6 queued" in text
    assert "1 failed" in text
    notice = nightly_notice(session=session, run=nightly, facts=facts)
    assert notice.path == f"/nights/{nightly.id}"  # the message links this page


def test_a_night_that_did_not_run_says_why(client: TestClient, nightly: NightlyRun) -> None:
    [broken] = [night for night in client.get("/api/v1/nights").json() if night["error"]]
    assert broken["url"] == f"/nights/{broken['id']}"
    page = client.get(broken["url"])
    assert page.status_code == 200
    assert "did not run: branch" in page.text
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_an_unknown_night_is_404(client: TestClient) -> None:
    answer = client.get("/api/v1/nights/999")
    assert answer.status_code == 404
    assert "no nightly run 999" in answer.json()["detail"]
    assert client.get("/nights/999").status_code == 404
    assert client.get("/api/v1/nights/0").status_code == 422


def _nights(session: Session, count: int) -> list[int]:
    runs = [
        NightlyRun(schedule="nightly", fired_at=FIRED + dt.timedelta(days=day), branch="main", backfilled=[])
        for day in range(count)
    ]
    session.add_all(runs)
    session.commit()
    return [run.id for run in runs]


@pytest.fixture
def capped(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> Iterator[TestClient]:
    """The app with a page size of 2, on the test's transaction."""
    app = create_app(
        settings.model_copy(update={"max_page_size": 2}), engine, sessions=sessions, prepare=False
    )
    with TestClient(app) as test_client:
        yield test_client


def test_the_list_is_newest_first_and_capped(
    client: TestClient, capped: TestClient, session: Session
) -> None:
    ids = _nights(session, 3)
    assert [night["id"] for night in client.get("/api/v1/nights").json()] == ids[::-1]
    assert [night["id"] for night in client.get("/api/v1/nights", params={"limit": 1}).json()] == ids[2:]
    assert [night["id"] for night in capped.get("/api/v1/nights", params={"limit": 100}).json()] == ids[:0:-1]
    assert client.get("/api/v1/nights", params={"limit": 0}).status_code == 422
    page = capped.get("/nights")
    assert page.status_code == 200
    assert [f'data-night="{night}"' in page.text for night in ids] == [False, True, True]
    assert page.text.index(f'href="/nights/{ids[2]}"') < page.text.index(f'href="/nights/{ids[1]}"')
    assert '<a href="/nights">Nights</a>' in client.get("/").text  # in the nav


def test_no_night_yet(client: TestClient) -> None:
    assert client.get("/api/v1/nights").json() == []
    page = client.get("/nights")
    assert page.status_code == 200
    assert "No nightly run yet" in page.text
