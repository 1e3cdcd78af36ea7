"""Leader election: of all processes that could schedule, exactly one does.

PostgreSQL: the leader holds a session-level ``pg_try_advisory_lock(LOCK_KEY)`` on a dedicated
connection (its own engine, no pool, so closing it really closes it). When the leader's process
or connection dies, PostgreSQL releases the lock and the next follower to retry takes over.

SQLite (one machine): an exclusive ``flock`` (``filelock``) on ``<database>.scheduler.lock`` next
to the database file plays the same role; the kernel releases it when the holder's process exits.
Each :class:`FileLeader` opens the file itself, so two in one process exclude each other too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from pathlib import Path
from typing import Protocol

from filelock import Timeout, UnixFileLock
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

logger = logging.getLogger("perftrack.scheduler")

# "perftrak" as a big-endian 64-bit integer, minus the sign bit: the one scheduler lock.
LOCK_KEY = int.from_bytes(b"perftrak", "big") & 0x7FFF_FFFF_FFFF_FFFF


def leader_name() -> str:
    """How this process names its leader connection (``perftrack-scheduler:HOST:PID``)."""
    return f"perftrack-scheduler:{socket.gethostname()[:30]}:{os.getpid()}"


class Leader(Protocol):
    """Something exactly one process can hold at a time."""

    def acquire(self) -> bool:
        """Try once, without waiting; true when this process now leads (or already did)."""

    def is_held(self) -> bool:
        """Whether this process still leads (false once the lock's connection is gone)."""

    def release(self) -> None:
        """Stop leading (idempotent)."""


class PostgresLeader:
    """A session-level advisory lock held on a dedicated connection."""

    def __init__(self, url: str, *, key: int = LOCK_KEY) -> None:
        self.key = key
        # The name shows in pg_stat_activity: which process leads is one query away.
        self._engine: Engine = create_engine(
            url, poolclass=NullPool, connect_args={"application_name": leader_name()}
        )
        self.connection: Connection | None = None

    def acquire(self) -> bool:
        if self.is_held():
            return True
        try:
            connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as error:
            logger.warning("scheduler leader election: cannot connect: %s", error)
            return False
        try:
            won = bool(connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key}))
        except SQLAlchemyError as error:
            logger.warning("scheduler leader election failed: %s", error)
            won = False
        if won:
            self.connection = connection
        else:
            connection.close()
        return won

    def is_held(self) -> bool:
        if self.connection is None:
            return False
        try:
            if self.connection.closed or self.connection.invalidated:
                raise SQLAlchemyError("leader connection closed")
            self.connection.execute(text("SELECT 1"))
        except SQLAlchemyError:
            self._drop()
            return False
        return True

    def release(self) -> None:
        if self.connection is not None:
            # A connection already gone took the lock with it.
            with contextlib.suppress(SQLAlchemyError):
                self.connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
        self._drop()

    def dispose(self) -> None:
        """Release and close the dedicated engine."""
        self.release()
        self._engine.dispose()

    def _drop(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(SQLAlchemyError):
                self.connection.close()
            self.connection = None


class FileLeader:
    """An exclusive, non-blocking ``flock`` on a file (``filelock``).

    Each instance has a lock of its own (its own descriptor; not a singleton shared by path), so a
    second leader in the same process is refused as one in another process would be.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Not thread-local: the election thread takes it, and a stopping thread may release it.
        self._lock = UnixFileLock(path, thread_local=False)

    def acquire(self) -> bool:
        if self._lock.is_locked:
            return True  # not taken again: one release ends the lead
        try:
            self._lock.acquire(blocking=False)
        except Timeout:
            return False
        except OSError as error:
            logger.warning("scheduler leader election: cannot lock %s: %s", self.path, error)
            return False
        return True

    def is_held(self) -> bool:
        return self._lock.is_locked

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release(force=True)


def make_leader(database_url: str, *, data_dir: Path) -> PostgresLeader | FileLeader:
    """The election that fits the database: an advisory lock, or a file lock beside the SQLite file."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        return PostgresLeader(database_url)
    database = url.database
    if url.get_backend_name() == "sqlite" and database and database != ":memory:":
        return FileLeader(Path(database).with_name(Path(database).name + ".scheduler.lock"))
    return FileLeader(data_dir / "scheduler.lock")
