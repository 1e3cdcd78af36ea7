"""API tokens and the runner registry."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import TokenRole
from tracker.models.base import Base, UTCDateTime, created_at, int_pk, json_dict, str_enum
from tracker.models.catalog import HardwareKind


class ApiToken(Base):
    """A bearer token. Only its SHA-256 is stored; the secret is shown once, at creation."""

    __tablename__ = "api_tokens"

    id: Mapped[int_pk]
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    role: Mapped[TokenRole] = mapped_column(str_enum(TokenRole, "token_role"), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False, comment="hex SHA-256")
    prefix: Mapped[str] = mapped_column(
        String(16), nullable=False, comment="first characters, to tell tokens apart"
    )
    created_at: Mapped[created_at]
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class Runner(Base):
    """A runner agent on a GPU host, as it last advertised itself.

    Its current job is the job it holds a live lease on (``jobs.leased_by_runner_id``), not a
    column here, so the two can never disagree. A runner is bound to exactly one runner token and
    a token to at most one runner (``token_id`` is unique): see :func:`tracker.queue.runners.register_runner`.
    """

    __tablename__ = "runners"

    id: Mapped[int_pk]
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    # The one token that may act as this runner (NULL: none yet; the next registration binds one).
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"), unique=True)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    gpu_count: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    labels: Mapped[json_dict]
    version: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    host: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    last_heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[created_at]

    hardware_kind: Mapped[HardwareKind] = relationship(lazy="joined")


class DashboardSession(Base):
    """A dashboard sign-in, kept server-side so that signing out ends it for every copy of the cookie.

    The browser's cookie carries a random session id; only its SHA-256 is stored. The session is
    live while it is neither revoked (sign-out) nor past ``expires_at``, and its token is an
    active admin token (revoking or rotating the token ends its sessions).
    """

    __tablename__ = "dashboard_sessions"

    id: Mapped[int_pk]
    session_hash: Mapped[str] = mapped_column(
        String(64), unique=True, nullable=False, comment="hex SHA-256 of the cookie's session id"
    )
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id"), nullable=False, index=True)
    created_at: Mapped[created_at]
    last_seen_at: Mapped[dt.datetime] = mapped_column(
        UTCDateTime(), nullable=False, comment="UTC; refreshed at most once a minute"
    )
    expires_at: Mapped[dt.datetime] = mapped_column(
        UTCDateTime(), nullable=False, index=True, comment="UTC; the session ends then, used or not"
    )
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), comment="UTC; set by sign-out")


class SignInThrottle(Base):
    """Recent failed dashboard sign-ins of one client address (``*``: of every client together)."""

    __tablename__ = "sign_in_throttles"

    id: Mapped[int_pk]
    client: Mapped[str] = mapped_column(
        String(64), unique=True, nullable=False, comment="IPv4 address, IPv6 /64 prefix, or * for all"
    )
    failures: Mapped[int] = mapped_column(Integer, nullable=False, comment="failures since the count began")
    last_failure_at: Mapped[dt.datetime] = mapped_column(
        UTCDateTime(), nullable=False, index=True, comment="UTC"
    )
    blocked_until: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="UTC; every sign-in from this client waits until then"
    )
