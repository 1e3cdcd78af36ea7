"""Dashboard sessions kept server-side: started at sign-in, ended by sign-out, expiry or the token.

The browser's cookie carries a random 256-bit session id; the table keeps only its SHA-256, so a
read of the database signs nobody in. A session is live while its row exists, is not revoked, is
not past ``expires_at``, and its token is still an active admin token: revoking or rotating the
token ends every session signed in with it, on the next request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from tracker.enums import TokenRole
from tracker.models import ApiToken, DashboardSession

# last_seen_at is written at most this often: a page view is not a database write every time.
TOUCH_INTERVAL = dt.timedelta(seconds=60)


@dataclass(frozen=True)
class StartedSession:
    """A new session: ``secret`` goes into the cookie and is never stored."""

    session: DashboardSession
    secret: str


@dataclass(frozen=True)
class LiveSession:
    """A session that may act: its row's id, its token's id and name, and whether to touch it."""

    session_id: int
    token_id: int
    token_name: str
    needs_touch: bool


def hash_session_id(secret: str) -> str:
    """Hex SHA-256 of a cookie's session id (random, so a fast hash is enough)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def start_session(
    *, session: Session, token: ApiToken, now: dt.datetime, lifetime: dt.timedelta
) -> StartedSession:
    """Record a new signed-in session for ``token`` lasting ``lifetime`` from ``now``."""
    secret = secrets.token_urlsafe(32)
    row = DashboardSession(
        session_hash=hash_session_id(secret),
        token_id=token.id,
        created_at=now,
        last_seen_at=now,
        expires_at=now + lifetime,
    )
    session.add(row)
    session.flush()
    return StartedSession(session=row, secret=secret)


def live_session(*, session: Session, secret: str, now: dt.datetime) -> LiveSession | None:
    """The live session the cookie's ``secret`` names, or ``None`` (unknown, ended, or its token)."""
    if not secret or len(secret) > 128:
        return None
    found = session.execute(
        select(DashboardSession, ApiToken)
        .join(ApiToken, ApiToken.id == DashboardSession.token_id)
        .where(DashboardSession.session_hash == hash_session_id(secret))
    ).first()
    if found is None:
        return None
    row, token = found
    if row.revoked_at is not None or row.expires_at <= now:
        return None
    if token.revoked_at is not None or token.role is not TokenRole.ADMIN:
        return None
    return LiveSession(
        session_id=row.id,
        token_id=token.id,
        token_name=token.name,
        needs_touch=now - row.last_seen_at >= TOUCH_INTERVAL,
    )


def touch_session(*, session: Session, session_id: int, now: dt.datetime) -> None:
    """Note that the session was used at ``now``."""
    session.execute(
        update(DashboardSession).where(DashboardSession.id == session_id).values(last_seen_at=now)
    )


def end_session(*, session: Session, secret: str, now: dt.datetime) -> bool:
    """Revoke the session the cookie's ``secret`` names (sign-out); whether one was live."""
    result = session.execute(
        update(DashboardSession)
        .where(
            DashboardSession.session_hash == hash_session_id(secret),
            DashboardSession.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


def prune_sessions(*, session: Session, now: dt.datetime) -> int:
    """Delete sessions past their expiry (revoked ones are kept until then, as a record)."""
    result = session.execute(delete(DashboardSession).where(DashboardSession.expires_at <= now))
    return int(getattr(result, "rowcount", 0) or 0)
