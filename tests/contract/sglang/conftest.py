"""Session fixtures for the sglang contract tests: one probe per checked sglang release.

``sglang_current`` and ``sglang_legacy`` are the probes of the versions ``versions.toml`` gives those
roles. Each starts once per test session (20–40 s: sglang's import) and is closed at its end. When a
version is not installed (or was installed from an older requirements file) the tests that need it are
skipped with the install command, unless ``PERFTRACK_SGLANG_CONTRACT=required`` (CI sets it in
``scripts/test.sh``): then they fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.contract.sglang.env import ProbeSession, SglangContractEnv

REQUIRED_ENV = "PERFTRACK_SGLANG_CONTRACT"


def open_probe(role: str) -> Iterator[ProbeSession]:
    """Start the probe of the version with ``role``; skip (or fail, when required) if it is missing."""
    env = SglangContractEnv.for_role(role)
    reason = env.missing_reason()
    if reason is not None:
        message = f"{reason}: run {env.install_command}"
        if os.environ.get(REQUIRED_ENV) == "required":
            pytest.fail(f"{REQUIRED_ENV}=required, but {message}", pytrace=False)
        pytest.skip(message)
    session = env.start()
    try:
        yield session
    finally:
        session.close()


def probe_fixture(role: str) -> Callable[[], Iterator[ProbeSession]]:
    """A session-scoped fixture ``sglang_<role>`` holding that version's probe."""

    def fixture() -> Iterator[ProbeSession]:
        yield from open_probe(role)

    fixture.__doc__ = f"The probe of the {role} sglang release (tests/contract/sglang/versions.toml)."
    return pytest.fixture(scope="session", name=f"sglang_{role}")(fixture)


sglang_current = probe_fixture("current")
sglang_legacy = probe_fixture("legacy")
