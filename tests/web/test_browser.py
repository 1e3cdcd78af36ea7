"""The pages in a real browser: Debian's Chromium driven by Playwright, against a live server
whose database was filled through the real ingest path (the CLI posting parsed logs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import SUITES
from tests.factories import regression_payloads
from tests.live import live_server
from tracker import db
from tracker.models import TokenRole
from tracker.settings import Settings
from tracker.tokens import create_token

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server on a fresh SQLite database holding the Qwen-Image regression."""
    root = tmp_path_factory.mktemp("browser")
    settings = Settings(database_url=f"sqlite:///{root / 'pages.db'}", data_dir=root, suite_dir=SUITES)
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            secret = create_token(session=session, name="browser-test", role=TokenRole.RUNNER).secret
        engine.dispose()
        for body in regression_payloads('Fuse <b>norm</b> & "friends" <script>window.pwned=1</script>'):
            response = httpx.post(
                f"{url}/api/v1/results", json=body, headers={"Authorization": f"Bearer {secret}"}
            )
            assert response.status_code == 201, response.text
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.console_errors = errors
    yield page
    context.close()


def test_overview_to_series_to_run(server: str, page: object) -> None:
    page.goto(server + "/")  # type: ignore[attr-defined]
    row = page.locator('tr[data-case="qwen-image-t2i-1024"][data-hardware="H200"]')  # type: ignore[attr-defined]
    assert "258.2 ms" in row.inner_text()
    assert "-10.2 %" in row.inner_text()
    row.get_by_role("link", name="qwen-image-t2i-1024").click()
    page.wait_for_url("**/series/qwen-image-t2i-1024/H200")  # type: ignore[attr-defined]
    rows = page.locator("#series tbody tr")  # type: ignore[attr-defined]
    assert rows.count() == 3
    texts = [rows.nth(index).inner_text() for index in range(3)]
    assert "9c1d5e2" in texts[0]
    assert "-10.2 %" in texts[0]
    assert "4739f2e" in texts[1]
    assert "+9.1 %" in texts[1]
    assert "669a9bd" in texts[2]
    regression_cell = rows.nth(1).locator("td.change")
    assert "regression" in (regression_cell.get_attribute("class") or "")
    # The title is shown as text, never run as markup.
    assert "<script>window.pwned=1</script>" in texts[1]
    assert page.evaluate("window.pwned") is None  # type: ignore[attr-defined]
    rows.nth(1).get_by_role("link").click()
    page.wait_for_url("**/runs/*")  # type: ignore[attr-defined]
    assert "287.6 ms" in page.locator("dl.facts").inner_text()  # type: ignore[attr-defined]
    assert page.locator("pre.log").inner_text().count("[DenoisingStage] started...") == 2  # type: ignore[attr-defined]
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_metric_picker_switches_metric(server: str, page: object) -> None:
    page.goto(server + "/series/qwen-image-t2i-1024/H200")  # type: ignore[attr-defined]
    page.select_option("select[name=metric]", "peak_memory_mb")  # type: ignore[attr-defined]
    page.wait_for_url("**metric=peak_memory_mb")  # type: ignore[attr-defined]
    assert "MiB" in page.locator("#series tbody tr").first.inner_text()  # type: ignore[attr-defined]
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_phone_width_has_no_horizontal_page_scroll(server: str, browser: object) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(server + "/series/qwen-image-t2i-1024/H200")
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    context.close()


def test_api_docs_render_without_leaving_the_machine(server: str, page: object) -> None:
    outside: list[str] = []
    page.on(  # type: ignore[attr-defined]
        "request", lambda request: outside.append(request.url) if not request.url.startswith(server) else None
    )
    page.goto(server + "/docs")  # type: ignore[attr-defined]
    page.get_by_text("/api/v1/results", exact=True).first.wait_for()  # type: ignore[attr-defined]
    assert outside == []
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_error_page(server: str, page: object) -> None:
    response = page.goto(server + "/runs/424242")  # type: ignore[attr-defined]
    assert response.status == 404
    assert "no run 424242" in page.locator(".failure-box").inner_text()  # type: ignore[attr-defined]
    # Chromium logs the document's own 404 status; nothing else may fail.
    unexpected = [e for e in page.console_errors if "status of 404" not in e]  # type: ignore[attr-defined]
    assert unexpected == []
