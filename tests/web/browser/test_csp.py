"""Under the Content-Security-Policy every page draws its charts and reports no violation: no inline
script, no event-handler attribute, nothing from another origin."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.web.browser.conftest import Dashboard
from tests.web.browser.polling import wait_for_js
from tests.web.dashboard_data import NIGHTLY_CASE

# Registered before any page script runs; Playwright injects it outside the page's policy.
COLLECT_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__csp.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
});
"""


@pytest.fixture
def watched(page: Any) -> Any:
    page.add_init_script(COLLECT_VIOLATIONS)
    return page


def _pages(dashboard: Dashboard) -> list[tuple[str, str | None]]:
    """(path, selector that appears once the page's script has drawn)."""
    alerts = httpx.get(dashboard.url + "/api/v1/alerts", params={"case": NIGHTLY_CASE}).json()
    return [
        ("/", None),
        (f"/series/{NIGHTLY_CASE}/H200", '#chart[data-ready="1"]'),
        (f"/alerts/{alerts[0]['id']}", "#alert-chart .main-svg"),
        (f"/comparisons/{dashboard.ids['comparison']}", ".main-svg"),
        ("/runs/1", None),
        ("/alerts", None),
        ("/jobs", None),
        ("/runners", None),
        ("/nightly", None),
        ("/login", None),
    ]


def test_pages_draw_and_report_no_policy_violation(dashboard: Dashboard, watched: Any) -> None:
    for path, drawn in _pages(dashboard):
        response = watched.goto(dashboard.url + path)
        assert response is not None
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
        if drawn is not None:
            watched.wait_for_selector(drawn, state="attached")
        watched.wait_for_load_state("networkidle")
        assert watched.evaluate("window.__csp") == [], path
    assert not [error for error in watched.console_errors if "Content Security Policy" in error]
    assert watched.console_errors == []


def test_filter_selects_submit_without_inline_handlers(dashboard: Dashboard, watched: Any) -> None:
    watched.goto(dashboard.url + "/jobs")
    watched.select_option('select[name="state"]', "failed")
    watched.wait_for_url(re.compile(r"state=failed"))
    assert watched.evaluate("window.__csp") == []
    assert watched.console_errors == []


def test_the_policy_blocks_an_inline_script(dashboard: Dashboard, watched: Any) -> None:
    """The check above can see a violation: an injected inline script is refused and reported."""
    watched.goto(dashboard.url + "/")
    watched.evaluate(
        """() => {
        const script = document.createElement("script");
        script.textContent = "window.ran = true";
        document.body.appendChild(script);
    }"""
    )
    wait_for_js(watched, "window.__csp.length > 0")
    assert watched.evaluate("window.ran") is None
    assert any("script-src" in violation for violation in watched.evaluate("window.__csp"))


def test_api_docs_still_work(dashboard: Dashboard, watched: Any) -> None:
    watched.goto(dashboard.url + "/docs")
    watched.wait_for_selector(".swagger-ui .opblock")
    assert watched.evaluate("window.__csp") == []
