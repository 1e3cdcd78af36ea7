"""Test fixtures: a real database (SQLite by default, PostgreSQL with PERFTRACK_TEST_DATABASE_URL),
migrated by Alembic once per worker (tests/databases.py), each test isolated in a transaction that is
rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker
from xdist.scheduler import LoadScopeScheduling

from tests.databases import empty_database, migrated_database, session_database
from tests.fakes import fake_github, github_contract
from tracker import db
from tracker.access.tokens import create_token
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import TokenRole
from tracker.settings import Settings
from web.app import create_app

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
# The tests' own suite files: editing a shipped suite (suites/) must not break a test. Only
# tests/tracker/catalog/test_suites.py::test_shipped_suites_load_and_validate reads SHIPPED_SUITES.
SUITES = DATA / "suites"
SHIPPED_SUITES = ROOT / "suites"


# Tests that must share one pytest-xdist worker, by path: each sglang probe and the browser's
# dashboard start once per worker that runs any of their tests. Every other test is scheduled alone.
# (xdist's own xdist_group marker does not group under pytest 9.2: it rewrites a node id attribute
# pytest no longer reads.)
SHARED_WORKER = {"tests/contract/": "sglang-probes", "tests/web/browser/": "browser"}


class SharedWorkerScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """Each test is a unit of work of its own, except the groups of :data:`SHARED_WORKER`."""

    def _split_scope(self, nodeid: str) -> str:
        return next((group for prefix, group in SHARED_WORKER.items() if nodeid.startswith(prefix)), nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> SharedWorkerScheduling:
    return SharedWorkerScheduling(config, log)


@pytest.fixture(autouse=True)
def github_contract_check() -> Iterator[None]:
    """Every exchange with a fake GitHub made during the test is held to GitHub's published
    description (tests/fakes/github_contract.py): the bot's requests and the fake's answers."""
    start = len(fake_github.MADE)
    yield
    made = fake_github.MADE[start:]
    del fake_github.MADE[start:]
    found = [
        problem
        for fake in made
        for exchange in fake.exchanges
        for problem in github_contract.problems(exchange)
    ]
    assert not found, "GitHub's description refuses:\n" + "\n".join(dict.fromkeys(found))


@pytest.fixture(scope="session")
def db_url() -> str:
    """This worker's shared database, migrated to head."""
    return session_database()


@pytest.fixture(scope="session")
def is_postgres(db_url: str) -> bool:
    return db_url.startswith("postgres")


@pytest.fixture(scope="session")
def engine(db_url: str) -> Iterator[Engine]:
    """The shared database with the tests' suites synced; tests see it through rolled-back transactions."""
    engine = db.make_engine(Settings(database_url=db_url).effective_database_url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
    yield engine
    engine.dispose()


@pytest.fixture
def connection(engine: Engine) -> Iterator[Connection]:
    """A connection inside a transaction that is rolled back after the test."""
    with engine.connect() as connection:
        transaction = connection.begin()
        yield connection
        transaction.rollback()


@pytest.fixture
def sessions(connection: Connection) -> sessionmaker[Session]:
    """Sessions whose commits become savepoints of the test's transaction."""
    return sessionmaker(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)


@pytest.fixture
def session(sessions: sessionmaker[Session]) -> Iterator[Session]:
    with sessions() as session:
        yield session


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=db_url,
        data_dir=tmp_path,
        suite_dir=SUITES,
        max_request_bytes=2 * 1024 * 1024,
        max_log_bytes=1024 * 1024,
        environment="test",
    )


@pytest.fixture
def client(settings: Settings, engine: Engine, sessions: sessionmaker[Session]) -> Iterator[TestClient]:
    """The app on the test's transaction (no start-up migration: the engine fixture did it)."""
    app = create_app(settings, engine, sessions=sessions, prepare=False)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def runner_token(session: Session) -> str:
    issued = create_token(session=session, name="test-runner", role=TokenRole.RUNNER)
    session.commit()
    return issued.secret


@pytest.fixture
def import_token(session: Session) -> str:
    """A runner-role token bound to no runner: what imports (``POST /api/v1/results``) take."""
    issued = create_token(session=session, name="test-importer", role=TokenRole.RUNNER)
    session.commit()
    return issued.secret


@pytest.fixture
def admin_token(session: Session) -> str:
    issued = create_token(session=session, name="test-admin", role=TokenRole.ADMIN)
    session.commit()
    return issued.secret


@pytest.fixture
def scratch_db_url(tmp_path: Path) -> Iterator[str]:
    """An empty database of the backend under test, for the tests of the migrations themselves."""
    with empty_database(tmp_path) as url:
        yield url


@pytest.fixture
def migrated_db_url(tmp_path: Path) -> Iterator[str]:
    """A database of its own, migrated to head and empty, for tests that commit (CLI, servers)."""
    with migrated_database(tmp_path) as url:
        yield url
