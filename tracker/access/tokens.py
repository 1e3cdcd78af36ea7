"""Bearer tokens: created once and shown once, stored as SHA-256, compared in constant time.

Tokens are 256-bit random secrets, so a plain SHA-256 is the right hash (a slow password hash
buys nothing against guessing). The lookup goes by the hash's unique index; the final check
uses :func:`hmac.compare_digest` so the comparison itself leaks no timing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from tracker.enums import TokenRole
from tracker.errors import AuthError, Conflict, Forbidden, InvalidInput, NotFound
from tracker.models import ApiToken, Runner, utcnow

TOKEN_PREFIX = "pt_"  # noqa: S105 - a visible marker, not a secret
_TOKEN_SHAPE = re.compile(r"^pt_[A-Za-z0-9_\-]{43}$")
BOOTSTRAP_ADMIN = "bootstrap-admin"
# How precisely a token's last use is kept (the registry and the account page show it).
LAST_USED_PRECISION = dt.timedelta(minutes=1)
_NAME_SHAPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,127}$")


@dataclass(frozen=True)
class IssuedToken:
    """A new token: ``secret`` is shown to the user once and never stored."""

    token: ApiToken
    secret: str


def hash_token(secret: str) -> str:
    """Hex SHA-256 of a token secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(*, session: Session, name: str, role: TokenRole, secret: str | None = None) -> IssuedToken:
    """Create a token; ``secret`` lets the admin bootstrap install a configured value."""
    if not _NAME_SHAPE.match(name):
        raise InvalidInput("name", "use 1-128 letters, digits, '.', '_', '-' or '@'")
    if session.scalar(select(ApiToken).where(ApiToken.name == name)) is not None:
        raise Conflict(f"a token named {name!r} already exists; revoke it or choose another name")
    secret = secret or TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(name=name, role=role, token_hash=hash_token(secret), prefix=secret[:8])
    session.add(token)
    session.flush()
    return IssuedToken(token=token, secret=secret)


def ensure_bootstrap_admin(*, session: Session, secret: str) -> ApiToken:
    """Make sure the configured admin token exists (idempotent across restarts)."""
    digest = hash_token(secret)
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if token is not None:
        return token
    name = BOOTSTRAP_ADMIN
    existing = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if existing is not None and existing.revoked_at is None:
        # The configured secret changed: retire the old bootstrap token.
        existing.revoked_at = utcnow()
        existing.name = f"{name}-revoked-{existing.id}"
        session.flush()
    return create_token(session=session, name=name, role=TokenRole.ADMIN, secret=secret).token


def authenticate(*, session: Session, secret: str | None, required: TokenRole) -> ApiToken:
    """The active token for ``secret`` with at least the ``required`` role, or an error."""
    digest = _digest(secret)
    return _checked(session.scalar(select(ApiToken).where(ApiToken.token_hash == digest)), digest, required)


# Built once: every claim asks it.
_TOKEN_WITH_RUNNER = (
    select(ApiToken, Runner)
    .outerjoin(Runner, Runner.token_id == ApiToken.id)
    .where(ApiToken.token_hash == bindparam("p_hash"))
)


def authenticate_with_runner(*, session: Session, secret: str | None) -> tuple[ApiToken, Runner | None]:
    """As :func:`authenticate` for a runner token, with the runner it is bound to, in one query.

    A claim's whole transaction is a handful of round trips; reading the token and its runner
    together saves one, and a session of its own saves three more.
    """
    digest = _digest(secret)
    row = session.execute(_TOKEN_WITH_RUNNER, {"p_hash": digest}).first()
    token, runner = (row[0], row[1]) if row is not None else (None, None)
    return _checked(token, digest, TokenRole.RUNNER), runner


def _digest(secret: str | None) -> str:
    if not secret:
        raise AuthError("missing bearer token")
    if len(secret) > 256:
        raise AuthError("malformed bearer token")
    return hash_token(secret)


def _checked(token: ApiToken | None, digest: str, required: TokenRole) -> ApiToken:
    if token is None or not hmac.compare_digest(token.token_hash, digest):
        raise AuthError("unknown bearer token")
    if token.revoked_at is not None:
        raise AuthError("this token has been revoked")
    if required is TokenRole.ADMIN and token.role is not TokenRole.ADMIN:
        raise Forbidden("this action needs an admin token")
    now = utcnow()
    last = token.last_used_at
    if last is None or now - last >= LAST_USED_PRECISION:
        token.last_used_at = now  # once a minute at most: a busy runner's requests need not all write
    return token


def revoke_token(*, session: Session, name: str) -> ApiToken:
    """Revoke a token by name; it stops working at once.

    A runner bound to it is unbound: the next runner token to register that name binds it
    (see :func:`tracker.queue.runners.register_runner`).
    """
    token = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if token is None:
        raise NotFound(f"no token named {name!r}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        session.execute(update(Runner).where(Runner.token_id == token.id).values(token_id=None))
    return token


def rotate_token(*, session: Session, name: str) -> IssuedToken:
    """Replace a token's secret: the old one stops working at once, the new one is returned once.

    The old row is kept, revoked and renamed ``NAME-rotated-ID`` (its history and last use stay on
    record, and dashboard sessions signed in with it end); a new row takes the name and role, and
    the runner bound to the old row (if any) is bound to the new one.
    """
    old = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if old is None:
        raise NotFound(f"no token named {name!r}")
    if old.revoked_at is not None:
        raise Conflict(f"token {name!r} is revoked; create a new token instead")
    if name == BOOTSTRAP_ADMIN:
        raise Conflict(f"{name!r} comes from PERFTRACK_ADMIN_TOKEN; change that setting to rotate it")
    suffix = f"-rotated-{old.id}"
    old.revoked_at = utcnow()
    old.name = name[: 128 - len(suffix)] + suffix
    session.flush()  # free the name before the new row takes it
    issued = create_token(session=session, name=name, role=old.role)
    session.execute(update(Runner).where(Runner.token_id == old.id).values(token_id=issued.token.id))
    return issued


def list_tokens(*, session: Session) -> list[ApiToken]:
    """Every token, newest first (hashes only; secrets are never stored)."""
    return list(session.scalars(select(ApiToken).order_by(ApiToken.created_at.desc(), ApiToken.id.desc())))


def looks_like_token(secret: str) -> bool:
    """Whether a string has the shape of a perftrack-issued token."""
    return bool(_TOKEN_SHAPE.match(secret))
