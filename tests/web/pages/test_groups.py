"""The group pages, rendered from stored groups: the list with its filters, one group with its alerts
side by side and their charts, triage by a signed-in admin."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.web.api.test_groups import store_group
from tests.web.pages.test_alerts import _csrf, _words


@pytest.fixture
def group_id(session: Session) -> int:
    alerts = store_group(session)
    assert alerts[0].group_id is not None
    return alerts[0].group_id


@pytest.fixture
def signed_in(client: TestClient, admin_token: str) -> TestClient:
    csrf = _csrf(client.get("/login").text)
    response = client.post("/login", data={"token": admin_token, "csrf_token": csrf}, follow_redirects=False)
    assert response.status_code == 303
    return client


def test_the_list_shows_the_group_and_filters_in_the_url(client: TestClient, group_id: int) -> None:
    html = client.get("/groups").text
    assert f'data-group="{group_id}"' in html
    assert "#4321" in html
    assert 'href="/groups"' in client.get("/").text  # in the navigation
    assert f'data-group="{group_id}"' in client.get("/groups?hardware=GB300").text
    assert f'data-group="{group_id}"' not in client.get("/groups?state=fixed").text
    assert f'data-group="{group_id}"' in client.get("/groups?model=Qwen/Qwen-Image-2.1").text
    refused = client.get("/groups?state=nonsense")
    assert refused.status_code == 422
    assert "unknown group state" in refused.text


def test_the_group_page_puts_its_alerts_side_by_side(client: TestClient, group_id: int) -> None:
    response = client.get(f"/groups/{group_id}")
    assert response.status_code == 200
    html = response.text
    words = _words(html)
    assert "3 alerts on 3 cases, GB300 and H200" in words
    assert 'href="https://github.com/sgl-project/sglang/pull/4321"' in html
    assert "Fuse the norm into the attention kernel (#4321)" in words
    assert len(re.findall(r'class="group-alert"', html)) == 3
    assert "output changed" in words
    assert "Sign in" in words


def test_a_missing_group_page_is_404(client: TestClient) -> None:
    assert client.get("/groups/999999").status_code == 404


def test_each_alert_page_links_its_group(client: TestClient, group_id: int) -> None:
    listed = client.get(f"/api/v1/groups/{group_id}").json()["alerts"]
    html = client.get(f"/alerts/{listed[0]['id']}").text
    assert f'href="/groups/{group_id}"' in html


def test_an_admin_triages_the_whole_group(signed_in: TestClient, group_id: int) -> None:
    page = signed_in.get(f"/groups/{group_id}").text
    response = signed_in.post(
        f"/groups/{group_id}/triage",
        data={
            "csrf_token": _csrf(page),
            "status": "expected",
            "reason": "the new kernel trades speed for accuracy",
            "assignee": "mei",
            "issue_url": "",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    after = signed_in.get(f"/groups/{group_id}").text
    assert 'id="group-state">expected<' in after
    assert f"Group {group_id} is now expected." in after
    assert after.count('data-state="expected"') == 3
    assert "mei" in _words(after)


def test_triage_without_a_csrf_token_is_refused(signed_in: TestClient, group_id: int) -> None:
    response = signed_in.post(
        f"/groups/{group_id}/triage", data={"status": "acknowledged"}, follow_redirects=False
    )
    assert response.status_code in (400, 403)
    assert 'id="group-state">open<' in signed_in.get(f"/groups/{group_id}").text
