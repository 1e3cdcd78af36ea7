"""Dashboard sessions live server-side: sign-out, expiry and the token end them for every copy of
the cookie; the cookie holds a random session id whose hash alone is stored."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from itsdangerous import URLSafeTimedSerializer
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from tracker.access.sessions import hash_session_id
from tracker.access.tokens import rotate_token
from tracker.models import ApiToken, DashboardSession
from tracker.settings import Settings
from web.app import create_app
from web.auth import COOKIE

START = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def timed(
    settings: Settings, engine: Engine, sessions: sessionmaker[Session], clock: Clock
) -> Iterator[TestClient]:
    app = create_app(settings, engine, sessions=sessions, prepare=False, clock=clock)
    with TestClient(app) as test_client:
        yield test_client


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def sign_in(client: TestClient, token: str) -> None:
    csrf = csrf_of(client.get("/login").text)
    response = client.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
    assert response.status_code == 303, response.text


def signed_in(client: TestClient) -> bool:
    return "Sign out" in client.get("/alerts").text


def rows(session: Session) -> list[DashboardSession]:
    session.expire_all()
    return list(session.scalars(select(DashboardSession).order_by(DashboardSession.id)))


def test_sign_out_ends_the_session_for_a_copied_cookie(
    timed: TestClient, admin_token: str, session: Session
) -> None:
    sign_in(timed, admin_token)
    copied = timed.cookies[COOKIE]
    csrf = csrf_of(timed.get("/alerts").text)
    assert timed.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code == 303
    assert not signed_in(timed)
    [row] = rows(session)
    assert row.revoked_at == START
    # Someone kept a copy of the cookie from before the sign-out: it signs no one in any more.
    thief = TestClient(timed.app)
    thief.cookies.set(COOKIE, copied)
    assert not signed_in(thief)
    assert thief.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code == 403


def test_the_cookie_names_a_session_whose_hash_alone_is_stored(
    timed: TestClient, admin_token: str, session: Session, settings: Settings
) -> None:
    sign_in(timed, admin_token)
    [row] = rows(session)
    token = session.scalar(select(ApiToken).where(ApiToken.name == "test-admin"))
    assert token is not None
    assert (row.token_id, row.created_at, row.last_seen_at, row.revoked_at) == (token.id, START, START, None)
    assert row.expires_at == START + dt.timedelta(seconds=settings.session_max_age_s)
    assert settings.session_secret is not None
    content = URLSafeTimedSerializer(
        settings.session_secret.get_secret_value(), salt="perftrack.web-session"
    ).loads(timed.cookies[COOKIE])
    assert set(content) == {"sid", "csrf"}
    assert row.session_hash == hash_session_id(content["sid"]) != content["sid"]


def test_a_validly_signed_cookie_naming_no_session_signs_no_one_in(
    client: TestClient, admin_token: str, session: Session, settings: Settings
) -> None:
    token = session.scalar(select(ApiToken).where(ApiToken.name == "test-admin"))
    assert token is not None
    assert settings.session_secret is not None
    serializer = URLSafeTimedSerializer(
        settings.session_secret.get_secret_value(), salt="perftrack.web-session"
    )
    # The old cookie shape (the token's id and name), and a session id never issued.
    for content in (
        {"token_id": token.id, "name": token.name, "csrf": "c" * 20},
        {"sid": "x" * 43, "csrf": "c"},
    ):
        forged = TestClient(client.app)
        forged.cookies.set(COOKIE, serializer.dumps(content))
        assert not signed_in(forged), content


def test_a_session_ends_at_its_expiry_on_the_server_clock(
    timed: TestClient, admin_token: str, clock: Clock, settings: Settings
) -> None:
    sign_in(timed, admin_token)
    clock.advance(seconds=settings.session_max_age_s - 1)
    assert signed_in(timed)
    clock.advance(seconds=1)
    assert not signed_in(timed)


def test_last_seen_is_written_at_most_once_a_minute(
    timed: TestClient, admin_token: str, clock: Clock, session: Session
) -> None:
    sign_in(timed, admin_token)
    clock.advance(seconds=30)
    assert signed_in(timed)
    assert rows(session)[0].last_seen_at == START
    clock.advance(seconds=45)
    assert signed_in(timed)
    assert rows(session)[0].last_seen_at == START + dt.timedelta(seconds=75)


def test_rotating_the_token_ends_its_sessions(timed: TestClient, admin_token: str, session: Session) -> None:
    sign_in(timed, admin_token)
    rotate_token(session=session, name="test-admin")
    session.commit()
    assert not signed_in(timed)


def test_expired_sessions_are_pruned_at_the_next_sign_in(
    timed: TestClient, admin_token: str, clock: Clock, session: Session, settings: Settings
) -> None:
    sign_in(timed, admin_token)
    clock.advance(seconds=settings.session_max_age_s + 1)
    other = TestClient(timed.app)
    sign_in(other, admin_token)
    [row] = rows(session)
    assert row.created_at == clock.now
