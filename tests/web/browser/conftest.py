"""Browser-test fixtures: a live server on a database filled by the real ingest path
(``tests/web/dashboard_data.py``), Debian's Chromium through Playwright, console-error capture,
and screenshots written to ``artifacts/screenshots`` (or ``$PERFTRACK_ARTIFACTS``), never committed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SUITES
from tests.live import live_server
from tests.web.dashboard_data import fill
from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.settings import Settings

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
ARTIFACTS = Path(os.environ.get("PERFTRACK_ARTIFACTS", Path(__file__).resolve().parents[3] / "artifacts"))

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/web/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@dataclass(frozen=True)
class Dashboard:
    """The live server and what it holds."""

    url: str
    admin_token: str
    ids: dict[str, int]


@pytest.fixture(scope="session")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    root = tmp_path_factory.mktemp("dashboard")
    settings = Settings(database_url=f"sqlite:///{root / 'dashboard.db'}", data_dir=root, suite_dir=SUITES)
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            admin = create_token(session=session, name="on-call", role=TokenRole.ADMIN).secret
            ids = fill(session)
        engine.dispose()
        yield Dashboard(url=url, admin_token=admin, ids=ids)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A laptop-sized page; ``page.console_errors`` collects console errors and uncaught exceptions."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.console_errors = errors
    yield page
    context.close()


def shoot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as ``artifacts/screenshots/<name>.png``."""
    folder = ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
