"""A runner token is bound to one runner: registration binds it, rotation moves it, revocation frees it."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from tracker import db
from tracker.access.tokens import authenticate, create_token, revoke_token, rotate_token
from tracker.catalog.cases import get_hardware_kind
from tracker.enums import TokenRole
from tracker.errors import AuthError, Conflict, Forbidden, NotFound
from tracker.models import ApiToken, Runner
from tracker.queue.runners import acting_runner, register_runner


def register(session: Session, name: str, token: ApiToken | None, gpus: int = 8) -> Runner:
    return register_runner(
        session=session,
        name=name,
        hardware=get_hardware_kind(session=session, name="H200"),
        gpu_count=gpus,
        labels={},
        version="1",
        host="gpu-host",
        token=token,
    )


def runner_token(session: Session, name: str) -> ApiToken:
    return create_token(session=session, name=name, role=TokenRole.RUNNER).token


def test_the_first_registration_binds_and_the_same_token_updates(session: Session) -> None:
    token = runner_token(session, "token-a")
    runner = register(session, "runner-a", token)
    assert runner.token_id == token.id
    again = register(session, "runner-a", token, gpus=4)
    assert (again.id, again.gpu_count, again.token_id) == (runner.id, 4, token.id)
    assert acting_runner(session=session, token=token).id == runner.id
    assert acting_runner(session=session, token=token, name="runner-a").id == runner.id


def test_a_name_bound_to_another_token_is_refused_and_unchanged(session: Session) -> None:
    mine, theirs = runner_token(session, "token-a"), runner_token(session, "token-b")
    runner = register(session, "runner-b", theirs)
    with pytest.raises(Forbidden, match="bound to another token"):
        register(session, "runner-b", mine, gpus=1)
    session.refresh(runner)
    assert (runner.gpu_count, runner.token_id) == (8, theirs.id)
    assert session.scalar(select(Runner).where(Runner.token_id == mine.id)) is None


def test_a_token_bound_to_one_runner_cannot_register_another(session: Session) -> None:
    token = runner_token(session, "token-a")
    register(session, "runner-a", token)
    with pytest.raises(Conflict, match="already acts as runner 'runner-a'"):
        register(session, "runner-c", token)
    assert session.scalar(select(Runner).where(Runner.name == "runner-c")) is None


def test_an_admin_token_never_acts_as_a_runner(session: Session) -> None:
    admin = create_token(session=session, name="admin", role=TokenRole.ADMIN).token
    with pytest.raises(Forbidden, match="admin token"):
        register(session, "runner-a", admin)
    register(session, "runner-a", runner_token(session, "token-a"))
    with pytest.raises(Forbidden, match="admin token"):
        acting_runner(session=session, token=admin, name="runner-a")


def test_acting_as_another_name_is_forbidden_and_an_unbound_token_must_register(session: Session) -> None:
    a, b = runner_token(session, "token-a"), runner_token(session, "token-b")
    register(session, "runner-a", a)
    register(session, "runner-b", b)
    with pytest.raises(Forbidden, match="acts as runner 'runner-a', not as 'runner-b'"):
        acting_runner(session=session, token=a, name="runner-b")
    fresh = runner_token(session, "token-c")
    with pytest.raises(Forbidden):
        acting_runner(session=session, token=fresh, name="runner-a")
    with pytest.raises(NotFound, match="register it first"):
        acting_runner(session=session, token=fresh, name="nobody")
    with pytest.raises(NotFound, match="bound to no runner"):
        acting_runner(session=session, token=fresh)


def test_a_legacy_runner_without_a_token_is_bound_by_its_first_registration(
    session: Session, caplog: pytest.LogCaptureFixture
) -> None:
    legacy = register(session, "old-runner", None)
    assert legacy.token_id is None
    token = runner_token(session, "token-a")
    with caplog.at_level(logging.WARNING, logger="tracker.queue.runners"):
        assert register(session, "old-runner", token).token_id == token.id
    assert "'old-runner' had no token" in caplog.text
    with pytest.raises(Forbidden):
        register(session, "old-runner", runner_token(session, "token-b"))


def test_rotation_moves_the_binding_to_the_new_token(session: Session) -> None:
    old = create_token(session=session, name="token-a", role=TokenRole.RUNNER)
    runner = register(session, "runner-a", old.token)
    new = rotate_token(session=session, name="token-a")
    session.refresh(runner)
    assert runner.token_id == new.token.id != old.token.id
    with pytest.raises(AuthError, match="revoked"):
        authenticate(session=session, secret=old.secret, required=TokenRole.RUNNER)
    token = authenticate(session=session, secret=new.secret, required=TokenRole.RUNNER)
    assert acting_runner(session=session, token=token, name="runner-a").id == runner.id
    assert register(session, "runner-a", token, gpus=2).gpu_count == 2


def test_revocation_frees_the_name_for_the_next_token(session: Session) -> None:
    register(session, "runner-a", runner_token(session, "token-a"))
    revoke_token(session=session, name="token-a")
    replacement = runner_token(session, "token-a2")
    assert register(session, "runner-a", replacement).token_id == replacement.id


def test_0011_keeps_one_runner_per_shared_token_and_frees_revoked_ones(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url, "0010")
    engine = db.make_engine(scratch_db_url)
    token = "INSERT INTO api_tokens (id, name, role, token_hash, prefix, revoked_at) VALUES ({}, '{}', 'runner', '{}', 'pt_', {})"
    runner = (
        "INSERT INTO runners (id, name, token_id, hardware_kind_id, gpu_count, labels, version, host, "
        "last_heartbeat_at) VALUES ({}, 'r{}', {}, 1, 1, '{{}}', '', '', {})"
    )
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO hardware_kinds (id, name, description) VALUES (1, 'H200', '')")
            )
            connection.execute(text(token.format(1, "shared", "a" * 64, "NULL")))
            connection.execute(text(token.format(2, "gone", "b" * 64, "'2026-01-01 00:00:00'")))
            for runner_id, token_id, heard in (
                (1, 1, "'2026-01-01 00:00:00'"),
                (2, 1, "'2026-01-02 00:00:00'"),  # heard from last: keeps the shared token
                (3, 1, "NULL"),
                (4, 2, "'2026-01-03 00:00:00'"),  # its token was revoked
            ):
                connection.execute(text(runner.format(runner_id, runner_id, token_id, heard)))
        db.upgrade(scratch_db_url, "0011")
        with engine.connect() as connection:
            bound = dict(connection.execute(text("SELECT id, token_id FROM runners ORDER BY id")).all())
        assert bound == {1: None, 2: 1, 3: None, 4: None}
    finally:
        engine.dispose()
