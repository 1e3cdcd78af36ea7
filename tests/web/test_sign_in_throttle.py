"""Repeated failed sign-ins slow down: 429 with a growing Retry-After per client address, a global
ceiling, counts kept in the database (shared by every server process), a clock moved by hand."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from tests.web.pages.test_account import START, Clock, csrf_of
from tracker.access.throttle import client_key, wait_after
from tracker.settings import Settings
from web.app import create_app

pytestmark = pytest.mark.dialect

WRONG = "pt_" + "w" * 43


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def app(settings: Settings, engine: Engine, sessions: sessionmaker[Session], clock: Clock) -> FastAPI:
    return create_app(settings, engine, sessions=sessions, prepare=False, clock=clock)


def client_at(app: FastAPI, address: str) -> TestClient:
    return TestClient(app, client=(address, 40000))


@pytest.fixture
def alice(app: FastAPI) -> Iterator[TestClient]:
    with client_at(app, "203.0.113.7") as client:
        yield client


def attempt(client: TestClient, token: str) -> tuple[int, str | None]:
    """Post the sign-in form; the status and the Retry-After header."""
    csrf = csrf_of(client.get("/login").text)
    response = client.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
    return response.status_code, response.headers.get("retry-after")


def test_thirty_wrong_tokens_do_not_all_get_401(alice: TestClient) -> None:
    statuses = [attempt(alice, WRONG)[0] for _ in range(30)]
    assert statuses[:5] == [401] * 5
    assert set(statuses[5:]) == {429}


def test_waits_grow_and_hold_even_for_the_right_token_until_they_pass(
    alice: TestClient, admin_token: str, clock: Clock
) -> None:
    for _ in range(4):
        assert attempt(alice, WRONG) == (401, None)
    assert attempt(alice, WRONG) == (401, None)  # the fifth failure starts a 10 s wait
    assert attempt(alice, admin_token) == (429, "10")
    clock.advance(seconds=4)
    assert attempt(alice, admin_token) == (429, "6")
    clock.advance(seconds=6)
    assert attempt(alice, WRONG) == (401, None)  # the sixth: 20 s
    assert attempt(alice, WRONG) == (429, "20")
    clock.advance(seconds=20)
    assert attempt(alice, WRONG)[0] == 401  # the seventh: 40 s
    assert attempt(alice, admin_token) == (429, "40")
    clock.advance(seconds=40)
    assert attempt(alice, admin_token)[0] == 303
    assert "Sign out" in alice.get("/alerts").text


def test_the_wait_is_capped(alice: TestClient, settings: Settings, clock: Clock) -> None:
    waits = []
    for _ in range(settings.sign_in_failures_allowed + 10):
        assert attempt(alice, WRONG)[0] == 401
        status, retry_after = attempt(alice, WRONG)
        if status == 429:
            assert retry_after is not None
            waits.append(int(retry_after))
            clock.advance(seconds=int(retry_after))
    assert waits == [10, 20, 40, 80, 160, 320, 640] + [900] * 6


def test_a_success_resets_only_its_own_count(app: FastAPI, alice: TestClient, admin_token: str) -> None:
    for _ in range(4):
        assert attempt(alice, WRONG)[0] == 401
    with client_at(app, "198.51.100.9") as bob:
        for _ in range(4):
            assert attempt(bob, WRONG)[0] == 401
        assert attempt(bob, admin_token)[0] == 303  # Bob's own count starts over...
        with client_at(app, "198.51.100.9") as bob_again:
            for _ in range(4):
                assert attempt(bob_again, WRONG)[0] == 401
    assert attempt(alice, WRONG)[0] == 401  # ...Alice's does not: this was her fifth
    assert attempt(alice, admin_token)[0] == 429


def test_the_count_starts_over_a_window_after_the_last_failure(
    alice: TestClient, settings: Settings, clock: Clock
) -> None:
    for _ in range(settings.sign_in_failures_allowed - 1):
        assert attempt(alice, WRONG)[0] == 401
    clock.advance(seconds=settings.sign_in_window_s)
    for _ in range(settings.sign_in_failures_allowed - 1):
        assert attempt(alice, WRONG)[0] == 401
    assert attempt(alice, WRONG)[0] == 401
    assert attempt(alice, WRONG)[0] == 429


def test_a_global_ceiling_slows_a_guesser_spread_over_many_addresses(
    settings: Settings, engine: Engine, sessions: sessionmaker[Session], clock: Clock, admin_token: str
) -> None:
    configured = settings.model_copy(update={"sign_in_global_failures_allowed": 3})
    app = create_app(configured, engine, sessions=sessions, prepare=False, clock=clock)
    for host in range(3):
        with client_at(app, f"192.0.2.{host + 1}") as guesser:
            assert attempt(guesser, WRONG)[0] == 401
    with client_at(app, "192.0.2.200") as admin:
        assert attempt(admin, admin_token) == (429, str(configured.sign_in_delay_s))
        clock.advance(seconds=configured.sign_in_delay_s)
        assert attempt(admin, admin_token)[0] == 303


def test_the_counts_hold_across_server_processes(
    app: FastAPI,
    alice: TestClient,
    settings: Settings,
    engine: Engine,
    sessions: sessionmaker[Session],
    clock: Clock,
    admin_token: str,
) -> None:
    other_worker = create_app(settings, engine, sessions=sessions, prepare=False, clock=clock)
    for _ in range(3):
        assert attempt(alice, WRONG)[0] == 401
    with client_at(other_worker, "203.0.113.7") as alice_elsewhere:
        for _ in range(2):
            assert attempt(alice_elsewhere, WRONG)[0] == 401
    assert attempt(alice, admin_token)[0] == 429


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb:cccc:dddd:eeee", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("testclient", "testclient"),
        (None, "unknown"),
    ],
)
def test_client_keys(address: str | None, key: str) -> None:
    assert client_key(address) == key


def test_waits_double_from_the_allowed_failure_up_to_the_cap() -> None:
    delay, cap = dt.timedelta(seconds=10), dt.timedelta(seconds=100)
    waits = [wait_after(n, allowed=3, delay=delay, max_delay=cap).total_seconds() for n in range(1, 9)]
    assert waits == [0, 0, 10, 20, 40, 80, 100, 100]
    assert wait_after(10**6, allowed=3, delay=delay, max_delay=cap) == cap
