"""The shared dashboard fixture serves pages and the bundled plotly.js."""

from __future__ import annotations

from typing import Any

import httpx

from tests.web.browser.conftest import Dashboard, shoot


def test_overview_loads_with_the_dashboard_data(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/")
    assert "wan2.1-t2v-1.3b" in page.content()
    shoot(page, "overview")
    assert page.console_errors == []


def test_plotly_is_served_by_perftrack(dashboard: Dashboard) -> None:
    response = httpx.get(dashboard.url + "/vendor/plotly.min.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert len(response.content) > 1_000_000
