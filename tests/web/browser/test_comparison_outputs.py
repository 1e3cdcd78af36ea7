"""The comparison page's output check in a real browser: base's and head's thumbnails load side by
side under the line that says the output changed (PSNR, SSIM)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import SUITES
from tests.live import live_server
from tests.tracker.output_pictures import picture
from tests.tracker.test_comparison_outputs import by_arm, drive_with_outputs
from tests.tracker.test_comparisons import compare, planted
from tests.web.browser.conftest import shoot
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
