"""Query plans of what the pages, the claim and the sweep run, checked for full scans of big tables.

The statements are captured as the application runs them (a SQLAlchemy ``before_cursor_execute``
listener around in-process requests and a sweep), then each distinct ``SELECT`` is explained with
its own parameters: ``EXPLAIN (FORMAT JSON)`` on PostgreSQL, ``EXPLAIN QUERY PLAN`` on SQLite.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine, event

from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.models import Job, JobAttempt, Run, RunArtifacts, RunStage
from tracker.settings import Settings
from tracker.workflows.sweep import sweep
from web.app import create_app

# The tables that grow with every run: a full scan of one of these is a finding.
BIG_TABLES = frozenset(
    table.name  # type: ignore[attr-defined]
    for table in (
        Run.__table__,
        RunArtifacts.__table__,
        RunStage.__table__,
        Job.__table__,
        JobAttempt.__table__,
    )
)


@dataclass(frozen=True)
class Captured:
    """One statement the application ran, with the first parameters seen and where."""

    origin: str
    statement: str
    parameters: Any


@dataclass(frozen=True)
class PlanFinding:
    """A captured statement's plan: the big tables it scans in full (empty: none)."""

    origin: str
    statement: str
    full_scans: tuple[str, ...]
    plan: str


@contextmanager
def capture(engine: Engine, origin: list[str], into: dict[str, Captured]) -> Iterator[None]:
    """Record every distinct SELECT run on ``engine`` while the block runs, labelled ``origin[0]``."""

    def listener(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> None:
        if not many and statement.lstrip().upper().startswith(("SELECT", "WITH")) and statement not in into:
            into[statement] = Captured(origin[0], statement, parameters)

    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield
    finally:
        event.remove(engine, "before_cursor_execute", listener)


def capture_statements(
    url: str, suite_dir: Path, data_dir: Path, paths: dict[str, str], now: dt.datetime
) -> list[Captured]:
    """Run the pages, one claim and a sweep in-process and return the SELECTs they issued."""
    settings = Settings(
        database_url=url,
        suite_dir=suite_dir,
        data_dir=data_dir,
        environment="production",
        session_secret=SecretStr(secrets.token_urlsafe(48)),
    )
    engine = db.make_engine(settings.effective_database_url)
    captured: dict[str, Captured] = {}
    origin = ["setup"]
    with db.session_scope(db.make_session_factory(engine)) as session:
        token = create_token(
            session=session, name=f"plan-runner-{time.time_ns():x}", role=TokenRole.RUNNER
        ).secret
    app = create_app(settings, engine)
    with TestClient(app) as client, capture(engine, origin, captured):
        for label, path in paths.items():
            origin[0] = label
            client.get(path).raise_for_status()
        origin[0] = "claim"
        headers = {"Authorization": f"Bearer {token}"}
        runner = {"name": "plan-poller", "hardware": "H200", "gpu_count": 8, "version": "bench"}
        client.post("/api/v1/runners", json=runner, headers=headers).raise_for_status()
        client.post("/api/v1/runners/plan-poller/claim", headers=headers).raise_for_status()
        origin[0] = "sweep"
        with db.session_scope(db.make_session_factory(engine)) as session:
            sweep(session=session, now=now)
            session.rollback()
    engine.dispose()
    return list(captured.values())


def explain(url: str, statements: list[Captured]) -> list[PlanFinding]:
    """Explain each statement and name the big tables its plan scans in full."""
    engine = db.make_engine(url)
    findings = []
    with engine.connect() as connection:
        for item in statements:
            if engine.dialect.name == "postgresql":
                result = connection.exec_driver_sql(
                    f"EXPLAIN (FORMAT JSON) {item.statement}", item.parameters
                )
                plan = result.scalar_one()[0]["Plan"]
                scans = tuple(sorted(set(_pg_seq_scans(plan)) & BIG_TABLES))
                rendered = _pg_render(plan)
            else:
                rows = connection.exec_driver_sql(
                    f"EXPLAIN QUERY PLAN {item.statement}", item.parameters
                ).all()
                details = [str(row[-1]) for row in rows]
                scans = tuple(sorted({_sqlite_full_scan(d) for d in details} & BIG_TABLES))
                rendered = "\n".join(details)
            findings.append(PlanFinding(item.origin, item.statement, scans, rendered))
        connection.rollback()
    engine.dispose()
    return findings


def _pg_seq_scans(node: dict[str, Any]) -> Iterator[str]:
    if node.get("Node Type") == "Seq Scan":
        yield str(node.get("Relation Name"))
    for child in node.get("Plans", []):
        yield from _pg_seq_scans(child)


def _pg_render(node: dict[str, Any], depth: int = 0) -> str:
    relation = f" on {node['Relation Name']}" if "Relation Name" in node else ""
    index = f" using {node['Index Name']}" if "Index Name" in node else ""
    line = f"{'  ' * depth}{node.get('Node Type')}{relation}{index} (rows={node.get('Plan Rows')})"
    return "\n".join([line, *(_pg_render(child, depth + 1) for child in node.get("Plans", []))])


def _sqlite_full_scan(detail: str) -> str:
    """``SCAN runs`` (no index) names ``runs``; index and covering-index scans name nothing."""
    words = detail.split()
    if len(words) >= 2 and words[0] == "SCAN" and "INDEX" not in detail:
        name, _, suffix = words[1].rpartition("_")
        return name if name and suffix.isdigit() else words[1]  # ``runs_1``: an alias of ``runs``
    return ""


def check_plans(
    url: str, suite_dir: Path, data_dir: Path, paths: dict[str, str], now: dt.datetime
) -> list[PlanFinding]:
    """Capture and explain; the findings of every distinct statement, full scans first."""
    findings = explain(url, capture_statements(url, suite_dir, data_dir, paths, now))
    return sorted(findings, key=lambda finding: (not finding.full_scans, finding.origin))
