"""``perftrack serve``: what start-up built is frozen out of the collector's full passes.

A full pass over a started server's ~270,000 objects took 180-260 ms on the 2-core benchmark host,
and the overview's allocations set one off every few requests: that was most of its p95.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from perftrack.cli.serve_cmd import served_app
from tests.conftest import SUITES
from tracker.settings import get_settings


@pytest.fixture
def served_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PERFTRACK_DATABASE_URL", f"sqlite:///{tmp_path / 'served.db'}")
    monkeypatch.setenv("PERFTRACK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PERFTRACK_SUITE_DIR", str(SUITES))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_the_served_app_freezes_what_start_up_built(served_env: None) -> None:
    try:
        served_app()  # builds the app (and sets up logging); nothing starts before its lifespan
        assert gc.get_freeze_count() > 100_000
    finally:
        gc.unfreeze()  # the test process's objects back in the oldest generation
