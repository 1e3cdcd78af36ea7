"""Alert groups in a real browser: the list, a group's alerts side by side with their charts drawn,
no console error; the screenshots docs/groups.md shows come from here."""

from __future__ import annotations

from typing import Any

import httpx

from tests.web.browser.conftest import Dashboard, shoot


def test_the_group_page_draws_each_alert_s_chart(dashboard: Dashboard, page: Any) -> None:
    groups = httpx.get(dashboard.url + "/api/v1/groups").json()
    assert groups, "the dashboard's confirmed alerts are grouped"
    page.goto(dashboard.url + "/groups")
    assert page.locator("#groups tbody tr").count() == len(groups)
    shoot(page, "groups")

    group = max(groups, key=lambda item: item["alert_count"])
    page.goto(f"{dashboard.url}/groups/{group['id']}")
    cards = page.locator(".group-alert")
    assert cards.count() == group["alert_count"]
    page.wait_for_selector(".group-alert .chart .main-svg")
    drawn = page.locator(".group-alert .chart .main-svg").count()
    assert drawn >= 1
    assert page.locator("#group-state").inner_text() == group["state"]
    shoot(page, "group")
    assert page.console_errors == []
