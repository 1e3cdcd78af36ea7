"""Fixtures of the fault tests: a fleet of real processes that is always cleaned up."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.databases import migrated_database
from tests.faults.harness import Runner, Tracker, kill_group, running_tracker
from tests.leases import UNEXPIRING_LEASE_S


class Fleet:
    """A test's tracker and runners; everything it started is stopped at the end."""

    def __init__(self, root: Path, stack: contextlib.ExitStack) -> None:
        self.root = root
        self._stack = stack
        self.runners: list[Runner] = []
        self._tracker: Tracker | None = None

    def tracker(
        self, *, lease_seconds: int = UNEXPIRING_LEASE_S, extra_env: dict[str, str] | None = None
    ) -> Tracker:
        """Start the tracker (once per test) on a fresh database; leases end only on cue by default."""
        assert self._tracker is None, "one tracker per test"
        url = self._stack.enter_context(migrated_database(self.root))
        self._tracker = self._stack.enter_context(
            running_tracker(self.root / "tracker", url, lease_seconds=lease_seconds, extra_env=extra_env)
        )
        return self._tracker

    def adopt(self, tracker: Tracker) -> Tracker:
        """Run this test's runners against a tracker started elsewhere (on another database)."""
        assert self._tracker is None, "one tracker per test"
        self._tracker = tracker
        return tracker

    def runner(self, name: str, *, bench: str = "ok", start: bool = True, **options: object) -> Runner:
        """A runner process against this test's tracker (started unless ``start=False``)."""
        assert self._tracker is not None
        runner = Runner(self._tracker, name, self.root / name, bench=bench, **options)  # type: ignore[arg-type]
        self.runners.append(runner)
        return runner.start() if start else runner

    def stop(self) -> None:
        for runner in self.runners:
            runner.stop(grace_s=5.0)
            if runner.pgid_file.exists():
                with contextlib.suppress(ValueError, OSError):
                    kill_group(int(runner.pgid_file.read_text()))


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with contextlib.ExitStack() as stack:
        fleet = Fleet(tmp_path, stack)
        try:
            yield fleet
        finally:
            fleet.stop()
