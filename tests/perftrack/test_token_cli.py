"""``perftrack token``: a secret is printed once at creation or rotation and never again; a rotated
or revoked secret stops working at once, on a running app too."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from perftrack.cli import app
from tests.conftest import SUITES
from tests.factories import result_body
from tests.perftrack.test_cli import cli_env
from tracker import db
from tracker.access.tokens import authenticate
from tracker.enums import TokenRole
from tracker.errors import AuthError
from tracker.models import ApiToken
from tracker.settings import Settings
from web.app import create_app

runner = CliRunner()


__all__ = ["cli_env"]


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and stdout (where secrets and tables go); errors go to stderr, see ``failure``."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def failure(*args: str) -> tuple[int, str]:
    """Exit code and stderr of a command expected to fail."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stderr


def secret_of(output: str) -> str:
    """The secret is the last line of the output, alone."""
    secret = output.strip().splitlines()[-1]
    assert secret.startswith("pt_"), output
    assert len(secret) == 46, output
    return secret


def check(url: str, secret: str, role: TokenRole = TokenRole.RUNNER) -> ApiToken:
    """Authenticate ``secret`` against the scratch database (raises AuthError if refused)."""
    engine = db.make_engine(Settings(database_url=url).effective_database_url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            token = authenticate(session=session, secret=secret, required=role)
            session.expunge(token)
            return token
    finally:
        engine.dispose()


def test_an_admin_token_is_shown_once_at_creation_and_never_again(cli_env: str) -> None:
    code, output = invoke("token", "create", "ops-admin", "--role", "admin")
    assert code == 0, output
    secret = secret_of(output)
    assert check(cli_env, secret, TokenRole.ADMIN).name == "ops-admin"
    code, listing = invoke("token", "list")
    assert code == 0
    assert "ops-admin" in listing
    assert secret not in listing
    assert secret[8:20] not in listing  # not even a part beyond the short prefix
    result = runner.invoke(app, ["token", "create", "ops-admin", "--role", "admin"])
    assert result.exit_code == 1
    assert "already exists" in result.stderr
    assert "pt_" not in result.stdout


def test_rotate_prints_a_new_secret_once_and_the_old_one_stops_at_once(cli_env: str) -> None:
    old = secret_of(invoke("token", "create", "h200-runner-1", "--role", "runner")[1])
    code, output = invoke("token", "rotate", "h200-runner-1")
    assert code == 0, output
    new = secret_of(output)
    assert new != old
    assert "old secret no longer works" in output
    with pytest.raises(AuthError, match="revoked"):
        check(cli_env, old)
    token = check(cli_env, new)
    assert (token.name, token.role) == ("h200-runner-1", TokenRole.RUNNER)
    code, listing = invoke("token", "list")
    assert new not in listing
    assert old not in listing
    # The old row stays on record, revoked and renamed.
    assert any(name.startswith("h200-runner-1-rotated-") for name in token_names(cli_env))


def test_rotate_keeps_the_role_and_refuses_unknown_revoked_and_bootstrap_tokens(cli_env: str) -> None:
    secret_of(invoke("token", "create", "triager", "--role", "admin")[1])
    rotated = secret_of(invoke("token", "rotate", "triager")[1])
    assert check(cli_env, rotated, TokenRole.ADMIN).role is TokenRole.ADMIN
    code, output = failure("token", "rotate", "nobody")
    assert code == 1
    assert "no token named 'nobody'" in output
    assert invoke("token", "revoke", "triager")[0] == 0
    result = runner.invoke(app, ["token", "rotate", "triager"])
    assert result.exit_code == 1
    assert "revoked" in result.stderr
    assert "pt_" not in result.stdout
    with pytest.raises(AuthError, match="revoked"):
        check(cli_env, rotated)


def test_a_long_name_can_be_rotated_twice(cli_env: str) -> None:
    name = "r" * 128
    secret_of(invoke("token", "create", name)[1])
    first = secret_of(invoke("token", "rotate", name)[1])
    second = secret_of(invoke("token", "rotate", name)[1])
    with pytest.raises(AuthError):
        check(cli_env, first)
    assert check(cli_env, second).name == name


def test_a_running_app_refuses_the_rotated_and_the_revoked_secret_on_the_next_request(
    cli_env: str, tmp_path: Path
) -> None:
    old = secret_of(invoke("token", "create", "uploader")[1])
    settings = Settings(database_url=cli_env, data_dir=tmp_path, suite_dir=SUITES, environment="test")
    with TestClient(create_app(settings)) as client:

        def upload(secret: str, sha: str) -> int:
            body = result_body(commit={"sha": sha, "committed_at": "2026-05-18T09:00:00Z"})
            answer = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {secret}"})
            return int(answer.status_code)

        assert upload(old, "a" * 40) == 201
        new = secret_of(invoke("token", "rotate", "uploader")[1])
        assert upload(old, "b" * 40) == 401
        assert upload(new, "b" * 40) == 201
        assert invoke("token", "revoke", "uploader")[0] == 0
        assert upload(new, "c" * 40) == 401
    names = token_names(cli_env)
    assert "uploader" in names
    assert any(name.startswith("uploader-rotated-") for name in names)


def token_names(url: str) -> set[str]:
    engine = db.make_engine(Settings(database_url=url).effective_database_url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            return set(session.scalars(select(ApiToken.name)))
    finally:
        engine.dispose()
