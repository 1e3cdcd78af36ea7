"""Alerts, comparisons and sign-in in a real browser: triage only for a signed-in admin, CSRF,
escaping of hostile commit titles, per-round charts, and layouts that fit a phone."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.web.browser.conftest import Dashboard, shoot
from tests.web.browser.polling import wait_for_js
from tests.web.dashboard_data import CASE, HOSTILE_TITLE, NIGHTLY_CASE


def _alert(dashboard: Dashboard, case: str) -> dict[str, Any]:
    """The case's regression (a nightly series also has the confirmed improvement that fixed it)."""
    params = {"case": case, "direction": "regression"}
    [alert] = httpx.get(dashboard.url + "/api/v1/alerts", params=params).json()
    return dict(alert)


def _detail(dashboard: Dashboard, alert_id: int) -> dict[str, Any]:
    return dict(httpx.get(f"{dashboard.url}/api/v1/alerts/{alert_id}").json())


def _sign_in(dashboard: Dashboard, page: Any, next_path: str) -> None:
    page.goto(f"{dashboard.url}/login?next={next_path}")
    page.fill("#token", dashboard.admin_token)
    page.click("button[type=submit].primary")
    page.wait_for_url(f"{dashboard.url}{next_path}")


def _fits(page: Any, width: int = 390) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.wait_for_timeout(400)  # plotly's responsive charts re-layout after the resize event
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= width, f"page scrolls sideways at {width} px ({overflow} px wide)"


def test_alert_list_orders_escapes_and_fits_a_phone(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/alerts")
    rows = page.locator("#alerts tbody tr")
    assert rows.count() >= 2
    assert HOSTILE_TITLE in page.locator("#alerts").inner_text()
    assert page.evaluate("typeof window.pwned") == "undefined"
    shoot(page, "alerts")
    page.goto(dashboard.url + f"/alerts?case={NIGHTLY_CASE}&hardware=H200")
    assert page.locator("#alerts tbody tr").count() == 2  # the regression and the improvement that fixed it
    assert page.locator("select[name=case]").input_value() == NIGHTLY_CASE
    _fits(page)
    assert page.console_errors == []


# Where each column of the alerts table ends, and which cells hold more than they show.
TABLE_GEOMETRY = """() => {
  const wrap = document.querySelector('#alerts').closest('.table-wrap');
  const box = wrap.getBoundingClientRect();
  const cells = [...document.querySelectorAll('#alerts th, #alerts td')];
  return {
    right: box.right,
    viewport: document.documentElement.clientWidth,
    scrolls: wrap.scrollWidth - wrap.clientWidth,
    columns: [...document.querySelectorAll('#alerts thead th')].map(
      (th) => [th.textContent.trim(), th.getBoundingClientRect().right]),
    overflowing: cells.filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
      .map((cell) => cell.textContent.trim().slice(0, 40)),
  };
}"""
COLUMNS = [
    "Alert",
    "Case",
    "Hardware",
    "Change",
    "Before → after",
    "First bad commit",
    "Culprit",
    "Basis",
    "State",
    "Age",
]


@pytest.mark.parametrize("width", [1024, 1280, 1400])
def test_alert_list_shows_every_column_and_a_suspect_as_unconfirmed_on_a_laptop(
    dashboard: Dashboard, page: Any, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(dashboard.url + "/alerts")
    geometry = page.evaluate(TABLE_GEOMETRY)
    assert [name for name, _ in geometry["columns"]] == COLUMNS
    for name, right in geometry["columns"]:
        assert right <= min(geometry["right"], geometry["viewport"]) + 0.5, f"{name} is cut off at {width} px"
    assert geometry["scrolls"] <= 0, f"the alerts table scrolls sideways at {width} px"
    assert geometry["overflowing"] == [], f"cells wider than their column at {width} px"
    # The demo's alert 4: detection saw -3.6 %, sixteen paired rounds measured -1.37 % and could not
    # call it against the threshold. It reads unconfirmed, with the rounds' estimate and interval.
    row = page.locator(f"#alerts tr[data-alert='{dashboard.ids['suspect']}']")
    assert row.get_attribute("data-state") == "unconfirmed"
    assert row.locator(".pill").inner_text() == "unconfirmed"
    change = row.locator("td.change").inner_text()
    assert "-1.37 %" in change
    assert "[-2.30, -0.45] %" in change
    assert "16 paired rounds" in change
    assert "too noisy" in row.locator("td.state").inner_text()
    assert "3.6" not in row.inner_text()
    assert "unconfirmed" in row.locator(".pill").get_attribute("title")  # the rounds' reason
    shoot(page, f"alerts-{width}")
    assert page.console_errors == []


def test_an_unconfirmed_suspect_s_page_leads_with_what_its_paired_rounds_measured(
    dashboard: Dashboard, page: Any
) -> None:
    page.goto(f"{dashboard.url}/alerts/{dashboard.ids['suspect']}")
    assert page.locator("#alert-state").inner_text() == "unconfirmed"
    assert page.locator("#alert-figure").inner_text() == "-1.37 %"
    paired = page.locator("#paired-estimate").inner_text()
    assert "[-2.30, -0.45] %" in paired
    assert "too noisy" in paired
    shoot(page, "alert-unconfirmed")
    _fits(page)
    assert page.console_errors == []


def test_alert_page_shows_chart_bisection_and_no_forms_when_anonymous(
    dashboard: Dashboard, page: Any
) -> None:
    alert = _alert(dashboard, NIGHTLY_CASE)
    page.goto(f"{dashboard.url}/alerts/{alert['id']}")
    page.wait_for_selector("#alert-chart .main-svg")
    assert page.locator("#bisection tbody tr").count() >= 2
    # The paired rounds that confirmed it: last good against first bad, round by round.
    assert page.locator("#confirmation-rounds tbody tr").count() >= 2
    assert "confirmed by" in page.locator("#confirmation").inner_text()
    promise = page.locator("#confirmation-promise").inner_text()
    assert promise.startswith("Confirmed means the paired rounds show a change beyond")
    assert "a change of the threshold is confirmed at least 80 %" in promise
    assert "Wrap the fused RMSNorm in torch._dynamo.disable" in page.locator("#culprit").inner_text()
    assert page.locator("form.triage-form").count() == 0
    assert "Sign in" in page.locator("#triage").inner_text()
    marks = page.evaluate(
        "document.getElementById('alert-chart').layout.annotations.map((item) => item.text)"
    )
    assert {"last good", "first bad", "culprit"} <= set(marks)
    shoot(page, "alert")
    _fits(page)
    assert page.console_errors == []


def test_anonymous_direct_post_is_refused(dashboard: Dashboard, page: Any) -> None:
    alert = _alert(dashboard, CASE)
    response = page.request.post(
        f"{dashboard.url}/alerts/{alert['id']}/triage", form={"status": "open", "reason": "drive-by"}
    )
    assert response.status == 403
    assert _detail(dashboard, alert["id"])["status"] == alert["status"]


def test_hostile_commit_title_is_text_on_the_alert_page(dashboard: Dashboard, page: Any) -> None:
    alert = _alert(dashboard, CASE)
    page.goto(f"{dashboard.url}/alerts/{alert['id']}")
    page.wait_for_selector("#alert-chart .main-svg")
    assert HOSTILE_TITLE in page.locator("#first-bad").inner_text()
    page.hover("#alert-chart .point >> nth=-1", force=True)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.console_errors == []


def test_signed_in_admin_triages_and_csrf_refuses_forgeries(dashboard: Dashboard, page: Any) -> None:
    alert = _alert(dashboard, CASE)
    path = f"/alerts/{alert['id']}"
    page.goto(dashboard.url + "/login")
    shoot(page, "login")
    _sign_in(dashboard, page, path)
    assert "on-call" in page.locator(".account").inner_text()
    assert alert["status"] == "fixed"
    # Reopen (a reason is required), then acknowledge.
    page.fill("#reopen-form textarea[name=reason]", "still slow on the new driver")
    page.click("#reopen-form button")
    page.wait_for_selector("#flash")
    assert "is now open" in page.locator("#flash").inner_text()
    page.click("#acknowledge-form button")
    page.wait_for_selector("#flash")
    assert page.locator("#alert-state").inner_text() == "acknowledged"
    detail = _detail(dashboard, alert["id"])
    assert detail["status"] == "acknowledged"
    assert detail["events"][-1]["actor"] == "on-call"
    assert detail["events"][-2]["reason"] == "still slow on the new driver"
    assert "on-call" in page.locator("#history").inner_text()
    shoot(page, "alert-signed-in")
    assert page.console_errors == []
    # A tampered hidden field is refused and changes nothing.
    page.fill("#close-form textarea[name=reason]", "forged")
    page.evaluate("document.querySelector('#close-form input[name=csrf_token]').value = 'tampered'")
    with page.expect_navigation():
        page.click("#close-form button")
    assert "403" in page.locator("h1").inner_text()
    # A request from the signed-in browser without the token is refused too.
    response = page.request.post(
        f"{dashboard.url}{path}/triage", form={"status": "invalid", "reason": "forged"}
    )
    assert response.status == 403
    assert _detail(dashboard, alert["id"])["status"] == "acknowledged"
    # The browser logs the refused (403) form post itself; nothing else may fail.
    assert all("403" in error for error in page.console_errors), page.console_errors


def test_comparison_page_shows_verdict_ci_and_rounds(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/comparisons")
    assert page.locator("#comparisons tbody tr").count() >= 2
    assert "calibration (A/A)" in page.locator("#comparisons").inner_text()
    page.goto(f"{dashboard.url}/comparisons/{dashboard.ids['comparison']}")
    page.wait_for_selector(".rounds-chart .main-svg")
    row = page.locator(f".results-table tr[data-case='{NIGHTLY_CASE}']")
    assert "improvement" in row.locator(".verdict").inner_text()
    assert row.locator(".ci").inner_text().startswith("[")
    traces = page.evaluate("document.querySelector('.rounds-chart').data.map((t) => t.y.length)")
    assert traces == [2, 2]
    assert page.locator("a[href='https://github.com/sgl-project/sglang/pull/43601']").count() >= 1
    assert page.locator("a[href^='/commits/']").count() >= 2
    markdown = page.locator("#markdown").inner_text()
    assert "| case | hardware | base ms | head ms |" in markdown
    assert f"| {NIGHTLY_CASE} | H200 |" in markdown
    page.click("#copy-markdown")
    wait_for_js(page, "document.getElementById('copy-status').textContent.length > 0")
    shoot(page, "comparison")
    _fits(page)
    assert page.console_errors == []


def test_calibration_page_is_labelled_and_shows_noise(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/comparisons/{dashboard.ids['calibration']}")
    assert "A/A calibration" in page.locator(".alert-head").inner_text()
    text = page.locator("#calibration").inner_text()
    assert "Round noise" in text
    assert "rounds:" in text or "Not stored yet" in text
    shoot(page, "calibration")
    assert page.console_errors == []


@pytest.mark.parametrize("path", ["/alerts", "/comparisons", "/login"])
def test_lists_fit_a_phone(dashboard: Dashboard, page: Any, path: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(dashboard.url + path)
    _fits(page)
    assert page.console_errors == []
