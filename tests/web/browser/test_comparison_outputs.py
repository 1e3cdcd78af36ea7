"""The comparison page's output check in a real browser: base's and head's thumbnails load side by
side under the line that says the output changed (PSNR, SSIM); each arm's run page shows its own
thumbnail and the same check against the other arm, linked to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import SUITES
from tests.live import live_server
from tests.tracker.comparisons.test_comparisons import compare, planted
from tests.tracker.comparisons.test_outputs import by_arm, drive_with_outputs
from tests.tracker.output_pictures import picture
from tests.web.browser.conftest import shoot
from tests.web.browser.polling import wait_for_js
from tracker import db
from tracker.settings import Settings

CASE = "qwen-image-t2i-1024"


@pytest.fixture(scope="module")
def changed_output(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A live server holding one comparison, faster, whose head's output changed; its URL and id."""
    root = tmp_path_factory.mktemp("outputs")
    settings = Settings(database_url=f"sqlite:///{root / 'outputs.db'}", data_dir=root, suite_dir=SUITES)
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            comparison = compare(session, rounds=2, pr_number=4242)
            drive_with_outputs(session, planted(-10.0), by_arm(picture(), picture(change=25.0)))
            comparison_id = comparison.id
        engine.dispose()
        yield url, comparison_id


def test_both_thumbnails_load_side_by_side_with_the_psnr(changed_output: tuple[str, int], page: Any) -> None:
    url, comparison_id = changed_output
    page.goto(f"{url}/comparisons/{comparison_id}")
    check = page.locator(f".output-check[data-case='{CASE}']")
    assert check.get_attribute("data-status") == "changed"
    summary = check.locator(".output-summary").inner_text()
    assert summary.startswith("output changed (PSNR ")
    assert " dB, SSIM 0." in summary
    row = page.locator(f".results-table tr[data-case='{CASE}']")
    assert row.locator(".verdict").inner_text() == "faster, but the output changed"
    images = check.locator(".output-pair img")
    assert images.count() == 2
    page.wait_for_function(
        "[...document.querySelectorAll('.output-pair img')].every((img) => img.complete && img.naturalWidth > 0)"
    )
    sizes = page.evaluate(
        "[...document.querySelectorAll('.output-pair img')].map((img) => "
        "({natural: img.naturalWidth, box: img.getBoundingClientRect().toJSON()}))"
    )
    base, head = sizes
    assert base["natural"] == head["natural"] == 32
    assert abs(base["box"]["top"] - head["box"]["top"]) < 1  # side by side, not stacked
    assert head["box"]["left"] >= base["box"]["right"]
    sides = [figure.get_attribute("data-side") for figure in check.locator("figure").all()]
    assert sides == ["base", "head"]
    shoot(page, "comparison-outputs")
    assert page.console_errors == []


# The run page's own thumbnail, once it has loaded (it is lazy: the output panel is below the fold).
RUN_THUMBNAIL = (
    "(() => { const img = document.querySelector('#output .thumbnails img');"
    " return img && img.complete && img.naturalWidth > 0 ? img.naturalWidth : 0; })()"
)


def test_each_arm_s_run_page_shows_its_thumbnail_and_the_other_arm_s_check(
    changed_output: tuple[str, int], page: Any
) -> None:
    url, comparison_id = changed_output
    page.goto(f"{url}/comparisons/{comparison_id}")
    check = page.locator(f".output-check[data-case='{CASE}']")
    summary = check.locator(".output-summary").inner_text()
    base_link, head_link = (
        check.locator(f"figure[data-side='{side}'] figcaption a") for side in ("base", "head")
    )
    base_run, head_run = (link.inner_text().removeprefix("run ") for link in (base_link, head_link))
    head_link.click()
    page.wait_for_url(f"{url}/runs/{head_run}")
    line = page.locator("#output-check")
    assert line.inner_text() == f"{summary}, against base run {base_run} of comparison {comparison_id}"
    assert line.get_attribute("class") == "bad"
    page.locator("#output .thumbnails img").scroll_into_view_if_needed()
    assert wait_for_js(page, RUN_THUMBNAIL) == 32
    shoot(page, "run-output-check")
    line.get_by_role("link", name=f"base run {base_run} of comparison {comparison_id}").click()
    page.wait_for_url(f"{url}/runs/{base_run}")
    assert page.locator("#output-check").inner_text() == (
        f"{summary}, against head run {head_run} of comparison {comparison_id}"
    )
    page.locator("#output .thumbnails img").scroll_into_view_if_needed()
    assert wait_for_js(page, RUN_THUMBNAIL) == 32
    assert page.console_errors == []
