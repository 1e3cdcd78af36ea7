"""Bring a database to where this perftrack can use it: the schema at head (SQLite migrates itself,
PostgreSQL must be upgraded on purpose), the suites synced, the configured admin token present.

Run by every process that opens the database for work: the web app at start-up, ``perftrack
scheduler`` and the command line.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, text

from tracker import db
from tracker.access.tokens import ensure_bootstrap_admin
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.errors import PerftrackError
from tracker.settings import Settings

logger = logging.getLogger("perftrack.web")
# "ptprepar" as a big-endian 64-bit integer, minus the sign bit: start-up's suite sync lock.
PREPARE_LOCK_KEY = int.from_bytes(b"ptprepar", "big") & 0x7FFF_FFFF_FFFF_FFFF


def prepare_database(settings: Settings, engine: Engine) -> None:
    """Bring the schema to head (SQLite only), refuse a stale PostgreSQL, sync suites, bootstrap."""
    head = db.head_revision()
    if settings.is_sqlite:
        if db.current_revision(engine) != head:
            db.upgrade(settings.effective_database_url)
    elif db.current_revision(engine) != head:
        raise PerftrackError(
            f"database schema is at {db.current_revision(engine)}, this perftrack needs {head}: "
            "run `perftrack db upgrade` first"
        )
    sessions = db.make_session_factory(engine)
    with db.session_scope(sessions) as session:
        if engine.dialect.name == "postgresql":
            # Servers starting together would insert the same new cases at once: one at a time
            # (SQLite's writer lock already does this).
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PREPARE_LOCK_KEY})
        if settings.suite_dir.is_dir():
            report = sync_suites(session=session, suites=load_suites(settings.suite_dir))
            if report.created or report.new_versions:
                logger.info(
                    "suites: %d new cases, %d new versions", len(report.created), len(report.new_versions)
                )
        if settings.admin_token is not None:
            ensure_bootstrap_admin(session=session, secret=settings.admin_token.get_secret_value())
