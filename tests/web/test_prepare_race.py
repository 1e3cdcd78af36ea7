"""Servers starting together on one fresh PostgreSQL database: every one syncs the suites without
tripping over the others' inserts (start-up takes an advisory lock)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, func, select, text

from tests.conftest import SUITES
from tracker import db
from tracker.bootstrap import prepare_database
from tracker.models import Case
from tracker.settings import Settings

pytestmark = pytest.mark.dialect


def test_servers_starting_together_sync_the_suites_once(migrated_db_url: str) -> None:
    if not migrated_db_url.startswith("postgres"):
        pytest.skip("SQLite's writer lock already serialises start-up")
    settings = Settings(database_url=migrated_db_url, suite_dir=SUITES)
    url = settings.effective_database_url
    engine = db.make_engine(url)
    try:
        for _round in range(4):
            with engine.begin() as connection:  # an empty catalog again, as on a first start
                connection.execute(
                    text("TRUNCATE cases, case_hardware, hardware_kinds, repositories CASCADE")
                )
            assert _boot_together(settings, engine, servers=3) == []
            with engine.connect() as connection:
                assert connection.scalar(select(func.count()).select_from(Case)) == 7
    finally:
        engine.dispose()


def _boot_together(settings: Settings, engine: Engine, *, servers: int) -> list[BaseException]:
    """Run ``prepare_database`` in ``servers`` threads released at the same instant; their errors."""
    start = threading.Barrier(servers)
    failures: list[BaseException] = []

    def boot() -> None:
        start.wait()
        try:
            prepare_database(settings, engine)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=boot) for _ in range(servers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return failures
