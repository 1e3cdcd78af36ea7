"""Slowing down repeated failed dashboard sign-ins, per client address and for every client together.

After ``failures_allowed`` wrong tokens from one client, every sign-in from it (a correct token
too) must wait ``delay``, doubled by each further failure up to ``max_delay``; the count starts over
once ``window`` has passed since the last failure and the end of any wait. The row keyed ``*``
counts every client's failures the same way against ``global_failures_allowed`` (0: no global
ceiling), so an attacker spread over many addresses is slowed down too. A success clears its own
client's count only: never another client's, never the global one.

The counts live in the database (``sign_in_throttles``), not in process memory, so every server
process behind a load balancer enforces the same limit; each check and update locks the rows it
reads (``SELECT ... FOR UPDATE`` on PostgreSQL, the writer lock on SQLite).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from tracker import db
from tracker.models import SignInThrottle
from tracker.settings import Settings

GLOBAL_CLIENT = "*"
UNKNOWN_CLIENT = "unknown"
_MAX_DOUBLINGS = 30  # 2**30 times any delay is past any sensible max_delay


@dataclass(frozen=True)
class ThrottlePolicy:
    """How many failures are free, how long the waits after them are, and when the count resets."""

    window: dt.timedelta
    failures_allowed: int
    global_failures_allowed: int  # 0: no global ceiling
    delay: dt.timedelta
    max_delay: dt.timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> ThrottlePolicy:
        """The policy the ``sign_in_*`` settings describe."""
        return cls(
            window=dt.timedelta(seconds=settings.sign_in_window_s),
            failures_allowed=settings.sign_in_failures_allowed,
            global_failures_allowed=settings.sign_in_global_failures_allowed,
            delay=dt.timedelta(seconds=settings.sign_in_delay_s),
            max_delay=dt.timedelta(seconds=settings.sign_in_max_delay_s),
        )


def wait_after(failures: int, *, allowed: int, delay: dt.timedelta, max_delay: dt.timedelta) -> dt.timedelta:
    """How long sign-ins wait after the ``failures``-th failure in a row (zero while still free).

    Parameters
    ----------
    failures
        Failures counted so far, the latest included.
    allowed
        Failures that cost nothing; the ``allowed``-th one starts the first wait.
    delay, max_delay
        The first wait, and the cap the doubling waits stop at.

    Returns
    -------
    dt.timedelta
        ``delay * 2 ** (failures - allowed)``, capped; zero below ``allowed``.
    """
    beyond = failures - allowed
    if beyond < 0:
        return dt.timedelta(0)
    doubled: dt.timedelta = delay * (1 << min(beyond, _MAX_DOUBLINGS))
    return min(max_delay, doubled)


def count_is_stale(row: SignInThrottle, *, now: dt.datetime, window: dt.timedelta) -> bool:
    """Whether ``window`` has passed since the row's last failure and the end of its wait."""
    settled = max(row.last_failure_at, row.blocked_until or row.last_failure_at)
    return now - settled >= window


def client_key(address: str | None) -> str:
    """The throttle key of a client address: IPv4 as is, IPv6 by its /64 (one host's usual share)."""
    if not address:
        return UNKNOWN_CLIENT
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def _locked_rows(session: Session, keys: list[str]) -> dict[str, SignInThrottle]:
    rows = session.scalars(
        select(SignInThrottle)
        .where(SignInThrottle.client.in_(keys))
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    return {row.client: row for row in rows}


def wait_for(*, session: Session, client: str, now: dt.datetime) -> dt.timedelta | None:
    """How long a sign-in from ``client`` must wait before its token is even checked (``None``: no wait)."""
    rows = _locked_rows(session, [client, GLOBAL_CLIENT])
    waits = [
        row.blocked_until - now for row in rows.values() if row.blocked_until and row.blocked_until > now
    ]
    return max(waits, default=None)


def record_failure(*, session: Session, client: str, now: dt.datetime, policy: ThrottlePolicy) -> None:
    """Count a wrong token from ``client`` (and towards the global ceiling), starting or growing waits."""
    counted = [(client, policy.failures_allowed)]
    if policy.global_failures_allowed > 0:
        counted.append((GLOBAL_CLIENT, policy.global_failures_allowed))
    for key, _allowed in counted:
        # Two processes failing the same client at once: one inserts, the other finds its row.
        session.execute(
            db.upsert_insert(session, SignInThrottle)
            .values(client=key, failures=0, last_failure_at=now)
            .on_conflict_do_nothing(index_elements=["client"])
        )
    rows = _locked_rows(session, [key for key, _allowed in counted])
    for key, allowed in counted:
        row = rows[key]
        if count_is_stale(row, now=now, window=policy.window):
            row.failures, row.blocked_until = 0, None
        row.failures += 1
        row.last_failure_at = now
        wait = wait_after(row.failures, allowed=allowed, delay=policy.delay, max_delay=policy.max_delay)
        if wait > dt.timedelta(0):
            row.blocked_until = now + wait
    session.flush()


def record_success(*, session: Session, client: str) -> None:
    """A correct token from ``client``: its own count starts over (no one else's, not the global one)."""
    session.execute(delete(SignInThrottle).where(SignInThrottle.client == client))


def prune_throttles(*, session: Session, now: dt.datetime, window: dt.timedelta) -> int:
    """Delete counts that have gone stale (``window`` past their last failure and their wait)."""
    cutoff = now - window
    result = session.execute(
        delete(SignInThrottle).where(
            SignInThrottle.last_failure_at <= cutoff,
            or_(SignInThrottle.blocked_until.is_(None), SignInThrottle.blocked_until <= cutoff),
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)
