"""The PostgreSQL pass runs only the tests marked ``dialect`` (scripts/test.sh); this keeps that set whole.

Code that behaves differently on the two databases is found by its constructs (upserts, row locks,
``RETURNING``, LISTEN/NOTIFY, advisory locks, type variants, branches on the dialect). Each module
holding one names here the test modules that exercise it, and those carry the marker. A new
construct in a module not listed fails this test: say which tests cover it on both databases.
A test that starts its own PostgreSQL cluster (``tests/faults/pgcluster.py``) runs on PostgreSQL in
every pass: it covers without the marker, and carries none (the PostgreSQL pass would repeat it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("tracker", "web", "perftrack", "migrations")
CONSTRUCT = re.compile(
    r"on_conflict_do|with_for_update|\.returning\(|\bLISTEN\b|\bNOTIFY\b|pg_notify|advisory_"
    r"|with_variant|dialect\.name|upsert_insert"
)
# Tests that branch on the backend themselves.
TEST_CONSTRUCT = re.compile(
    r"is_postgres|startswith\(\"(postgres|sqlite)|pgcluster|\.is_sqlite\b|dialect\.name|\bpg_\w+"
)

MIGRATIONS = "tests/migrations/test_migrations.py"
COVERED_BY: dict[str, tuple[str, ...]] = {
    "tracker/db.py": ("tests/tracker/series/test_counts.py", "tests/tracker/series/test_latest.py"),
    "tracker/models/base.py": ("tests/tracker/models/test_types.py",),
    "tracker/bootstrap.py": ("tests/web/test_prepare_race.py", "tests/web/test_health.py"),
    "tracker/access/throttle.py": ("tests/web/test_sign_in_throttle.py",),
    "tracker/comparisons/progress.py": ("tests/tracker/comparisons/test_comparisons.py",),
    "tracker/github/outbox.py": (
        "tests/web/api/test_github_webhook.py",
        "tests/web/api/test_github_failures.py",
    ),
    "tracker/ingest/batch.py": ("tests/tracker/ingest/test_batch.py", "tests/web/api/test_results_batch.py"),
    "tracker/queue/claims.py": (
        "tests/tracker/queue/test_jobs.py",
        "tests/web/api/test_claims_wait.py",
        "tests/faults/test_claims.py",
    ),
    "tracker/queue/jobs.py": ("tests/tracker/queue/test_jobs.py", "tests/faults/test_claims.py"),
    "tracker/queue/wakeups.py": ("tests/web/api/test_claims_wait.py",),
    "tracker/scheduling/leader.py": (
        "tests/tracker/scheduling/test_service.py",
        "tests/tracker/scheduling/test_processes.py",
        "tests/faults/test_postgres_restart.py",
    ),
    "tracker/scheduling/report.py": ("tests/tracker/scheduling/test_report.py",),
    "tracker/scheduling/nightly_notices.py": ("tests/tracker/notifications/test_events.py",),
    "tracker/notifications/outbox.py": (
        "tests/tracker/notifications/test_delivery.py",
        "tests/tracker/notifications/test_events.py",
    ),
    "tracker/series/counts.py": ("tests/tracker/series/test_counts.py",),
    "tracker/series/latest.py": ("tests/tracker/series/test_latest.py",),
    "tracker/series/pending.py": ("tests/tracker/series/test_pending.py",),
    "tracker/workflows/bisections.py": ("tests/tracker/workflows/test_bisections.py",),
    "tracker/workflows/evidence_reading.py": ("tests/tracker/workflows/test_evidence_reading.py",),
    "web/app.py": ("tests/web/api/test_claims_wait.py",),
    "web/waiters.py": ("tests/web/api/test_claims_wait.py",),
    "migrations/env.py": (MIGRATIONS,),
}


def _sources_with_constructs() -> set[str]:
    found = set()
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("migrations/versions/"):
                continue  # every revision is covered by the migration tests, listed once below
            if CONSTRUCT.search(path.read_text()):
                found.add(relative)
    return found


def _carries_marker(relative: str) -> bool:
    return "mark.dialect" in (ROOT / relative).read_text()


def _own_cluster(relative: str) -> bool:
    """Whether the test module starts a PostgreSQL cluster of its own, whatever the pass's database."""
    return "PrivateCluster" in (ROOT / relative).read_text()


def test_every_module_with_a_database_specific_construct_names_its_tests() -> None:
    found = _sources_with_constructs()
    unlisted = sorted(found - set(COVERED_BY))
    assert not unlisted, f"name the tests that run these on both databases in COVERED_BY: {unlisted}"
    stale = sorted(set(COVERED_BY) - found)
    assert not stale, f"these no longer hold a database-specific construct; drop them: {stale}"


@pytest.mark.parametrize("relative", sorted({test for tests in COVERED_BY.values() for test in tests}))
def test_the_covering_tests_carry_the_marker(relative: str) -> None:
    assert (ROOT / relative).exists(), relative
    if _own_cluster(relative):
        assert not _carries_marker(relative), (
            f"{relative} runs on its own PostgreSQL in every pass: unmark it"
        )
    else:
        assert _carries_marker(relative), f"{relative} covers database-specific code: mark it `dialect`"


def test_tests_that_branch_on_the_backend_carry_the_marker() -> None:
    unmarked = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name != Path(__file__).name
        and TEST_CONSTRUCT.search(path.read_text())
        and not _carries_marker(path.relative_to(ROOT).as_posix())
        and not _own_cluster(path.relative_to(ROOT).as_posix())
    ]
    assert not unmarked, f"these tests branch on the database: mark them `dialect`: {unmarked}"


def test_every_migration_revision_is_tested_on_both_databases() -> None:
    assert any((ROOT / "migrations" / "versions").glob("*.py"))
    assert _carries_marker(MIGRATIONS)
