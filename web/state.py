"""Process-wide objects the app is built around: settings, engine, session factory, clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tracker.models import utcnow
from tracker.settings import Settings
from web.waiters import JobWaiters


@dataclass(frozen=True)
class AppState:
    """What every request needs, created once by :func:`web.app.create_app`."""

    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]  # writers (SQLite: BEGIN IMMEDIATE)
    read_sessions: sessionmaker[Session]  # readers, never blocked by a writer
    clock: Callable[[], dt.datetime] = utcnow  # now, UTC (sessions' expiry, the sign-in throttle)
    waiters: JobWaiters = field(default_factory=JobWaiters)  # claims waiting for a job (long-poll)
