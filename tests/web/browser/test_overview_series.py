"""The overview and the series chart in Chromium, on the dashboard data: the regression comes first,
the chart draws every run at its commit, marks the alert at its first-bad commit and its culprit,
opens a run on click, keeps metric and range in the URL, escapes hostile titles, fits a phone."""

from __future__ import annotations

import re
from typing import Any

from tests.web.browser.conftest import Dashboard, shoot
from tests.web.dashboard_data import BROKEN, CULPRIT, HOSTILE_TITLE, NIGHTLY_CASE, sha

SERIES = f"/series/{NIGHTLY_CASE}/H200"
FIRST_BAD = 36

RUN_POINTS = """() => document.getElementById('chart').data
    .filter((trace) => trace.meta === 'runs')
    .reduce((count, trace) => count + trace.x.length, 0)"""


def _chart(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector('#chart[data-ready="1"]')


def _ok_rows(page: Any) -> int:
    """Runs of the table below the chart that have a value of the metric shown."""
    return int(page.locator("#series tbody tr[data-value]").count())


def test_overview_shows_the_regressions_first_and_never_runs_titles(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/")
    first_group = page.locator("#overview tbody.group").first
    assert "regressions" in first_group.locator("tr.group-head").inner_text().lower()
    regressed = first_group.locator("tr.case-row").evaluate_all("rows => rows.map((row) => row.dataset.case)")
    assert set(regressed) == {"qwen-image-t2i-1024", NIGHTLY_CASE}
    wan = page.locator(f'td[data-case="{NIGHTLY_CASE}"][data-hardware="H200"]')
    text = wan.inner_text()
    assert re.search(r"\+8\.\d % at " + sha(FIRST_BAD)[:7] + " · fixed", text), text
    assert "nightly ok" in text
    assert wan.locator("svg.spark polyline").count() == 1
    assert page.evaluate("window.pwned") is None
    assert page.console_errors == []
    shoot(page, "overview")


def test_overview_filters_in_the_url(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/")
    page.select_option("select[name=hardware]", "GB300")
    page.wait_for_url("**hardware=GB300**")
    assert page.locator('td.cell[data-hardware="H200"]').count() == 0
    assert page.locator('td.cell[data-hardware="GB300"]').count() > 0
    assert page.console_errors == []


def test_series_chart_draws_every_run_and_marks_the_alert(dashboard: Dashboard, page: Any) -> None:
    _chart(page, dashboard.url + SERIES)
    assert page.evaluate(RUN_POINTS) == _ok_rows(page) > 30
    names = page.evaluate("() => document.getElementById('chart').data.map((trace) => trace.name)")
    # Paired confirmation rounds are comparisons, not series points.
    assert {"nightly", "bisection", "alert (first bad)"} <= set(names)
    assert "confirmation" not in names
    symbols = page.evaluate(
        "() => Object.fromEntries(document.getElementById('chart').data"
        ".filter((t) => t.meta === 'runs').map((t) => [t.name, t.marker.symbol]))"
    )
    assert len(set(symbols.values())) == len(symbols)  # each kind its own marker
    alert = page.evaluate("() => document.getElementById('chart').data.find((t) => t.meta === 'alerts')")
    # The regression, and the confirmed improvement that fixed it (at the first night after the fix).
    assert [row[0] for row in alert["customdata"]] == [sha(45)[:7], sha(FIRST_BAD)[:7]]
    assert "2026-03-19 09:00:00" in alert["x"]  # commit 36's time
    annotations = page.evaluate(
        "() => document.getElementById('chart').layout.annotations.map((a) => a.text)"
    )
    assert f"culprit {sha(CULPRIT)[:7]}" in annotations
    failed = page.evaluate("() => document.getElementById('chart').data.find((t) => t.meta === 'failed')")
    assert [row[0] for row in failed["customdata"]] == [sha(BROKEN)[:7]]  # the broken night shows
    assert page.locator("#chart .scatterlayer .trace .points path").count() >= _ok_rows(page)
    assert page.console_errors == []
    shoot(page, "series")


def test_clicking_a_point_opens_its_run(dashboard: Dashboard, page: Any) -> None:
    _chart(page, dashboard.url + SERIES)
    nightly = page.evaluate(
        "() => { const t = document.getElementById('chart').data.find((t) => t.name === 'nightly');"
        " return t.customdata.map((row) => row[5]); }"
    )
    point = page.locator("#chart .scatterlayer .trace .points path").nth(0)
    box = point.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.wait_for_selector("#chart .hoverlayer .hovertext")
    page.mouse.click(x, y)
    page.wait_for_url("**/runs/*")
    run_id = int(page.url.rsplit("/", 1)[1])
    assert run_id in nightly
    assert page.console_errors == []


def test_hover_text_shows_hostile_titles_as_text(dashboard: Dashboard, page: Any) -> None:
    _chart(page, dashboard.url + "/series/qwen-image-t2i-1024/H200")
    points = page.locator("#chart .scatterlayer .trace .points path")
    assert page.evaluate(RUN_POINTS) == 3
    box = points.nth(1).bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    hover = page.locator("#chart .hoverlayer .hovertext")
    hover.wait_for()
    text = hover.text_content()
    assert "<script>window.pwned=1</script>" in text
    assert "<b>norm</b>" in text  # shown literally, not as bold markup
    assert page.evaluate("window.pwned") is None
    assert HOSTILE_TITLE in page.locator("#series").inner_text()
    assert page.console_errors == []


def test_metric_and_range_live_in_the_url(dashboard: Dashboard, page: Any) -> None:
    _chart(page, dashboard.url + SERIES + "?limit=10")
    assert page.locator("#series tbody tr").count() == 10
    assert page.evaluate(RUN_POINTS) == _ok_rows(page) > 0
    assert page.locator("#range a.on").count() == 0  # 10 is not one of the offered ranges
    _chart(page, dashboard.url + "/series/qwen-image-t2i-1024/H200?metric=peak_memory_mb&limit=2")
    assert page.evaluate(RUN_POINTS) == _ok_rows(page) == 2
    title = page.evaluate("() => document.getElementById('chart').layout.yaxis.title.text")
    assert title == "Peak memory (MiB)"
    page.select_option("select[name=metric]", "e2e_ms")
    page.wait_for_url(re.compile(r".*metric=e2e_ms&limit=2$"))
    page.wait_for_selector('#chart[data-ready="1"]')
    assert (
        page.evaluate("() => document.getElementById('chart').layout.yaxis.title.text") == "End to end (ms)"
    )
    page.locator("#range a", has_text="30").click()
    page.wait_for_url(re.compile(r".*metric=e2e_ms&limit=30$"))
    page.wait_for_selector('#chart[data-ready="1"]')
    assert page.evaluate(RUN_POINTS) == _ok_rows(page) == 3
    assert page.locator("#range a.on").inner_text() == "30"
    assert page.console_errors == []


def test_patched_candidates_are_listed_not_drawn(dashboard: Dashboard, page: Any) -> None:
    _chart(page, dashboard.url + SERIES)
    patched = page.locator("#patched-runs tbody tr")
    assert patched.count() >= 1
    ids = patched.evaluate_all("rows => rows.map((row) => Number(row.dataset.run))")
    drawn = page.evaluate(
        "() => document.getElementById('chart').data.filter((t) => t.meta === 'runs')"
        ".flatMap((t) => t.customdata.map((row) => row[5]))"
    )
    assert not set(ids) & set(drawn)
    assert page.console_errors == []


def test_phone_width_has_no_horizontal_page_scroll(dashboard: Dashboard, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    page.goto(dashboard.url + "/")
    assert page.evaluate(overflow) <= 0
    shoot(page, "overview-phone")
    _chart(page, dashboard.url + SERIES)
    assert page.evaluate(overflow) <= 0
    shoot(page, "series-phone")
    assert errors == []
    context.close()


def test_overview_to_series_to_run(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/")
    cell = page.locator('td[data-case="qwen-image-t2i-1024"][data-hardware="H200"]')
    assert "258.2 ms" in cell.inner_text()
    # vs the median of the runs before it (-6.3 % on the fixture's three; other tests may add runs)
    assert re.search(r"-\d+\.\d %", cell.inner_text())
    cell.get_by_role("link", name="258.2 ms").click()
    page.wait_for_url("**/series/qwen-image-t2i-1024/H200")
    rows = page.locator("#series tbody tr")
    assert rows.count() == 3
    texts = [rows.nth(index).inner_text() for index in range(3)]
    assert "9c1d5e2" in texts[0]
    assert "-10.2 %" in texts[0]
    assert "4739f2e" in texts[1]
    assert "+9.1 %" in texts[1]
    assert "669a9bd" in texts[2]
    assert "regression" in (rows.nth(1).locator("td.change").get_attribute("class") or "")
    assert "<script>window.pwned=1</script>" in texts[1]  # shown as text, never run
    assert page.evaluate("window.pwned") is None
    rows.nth(1).locator('a[href^="/runs/"]').click()
    page.wait_for_url("**/runs/*")
    assert "287.6 ms" in page.locator("main").inner_text()
    assert page.console_errors == []


def test_api_docs_render_without_leaving_the_machine(dashboard: Dashboard, page: Any) -> None:
    outside: list[str] = []
    page.on(
        "request",
        lambda request: outside.append(request.url) if not request.url.startswith(dashboard.url) else None,
    )
    page.goto(dashboard.url + "/docs")
    page.get_by_text("/api/v1/results", exact=True).first.wait_for()
    assert outside == []
    assert page.console_errors == []


def test_error_page(dashboard: Dashboard, page: Any) -> None:
    response = page.goto(dashboard.url + "/runs/424242")
    assert response.status == 404
    assert "no run 424242" in page.locator(".failure-box").inner_text()
    # Chromium logs the document's own 404 status; nothing else may fail.
    assert [e for e in page.console_errors if "status of 404" not in e] == []
