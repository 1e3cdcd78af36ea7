"""Tokens: shown once, stored as a hash, roles enforced, revocation immediate, bootstrap idempotent."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.access.tokens import (
    authenticate,
    create_token,
    ensure_bootstrap_admin,
    hash_token,
    looks_like_token,
    revoke_token,
)
from tracker.enums import TokenRole
from tracker.errors import AuthError, Conflict, Forbidden, InvalidInput
from tracker.models import ApiToken


def test_only_the_hash_is_stored(session: Session) -> None:
    issued = create_token(session=session, name="h200-runner-1", role=TokenRole.RUNNER)
    assert looks_like_token(issued.secret)
    stored = session.scalar(select(ApiToken).where(ApiToken.name == "h200-runner-1"))
    assert stored is not None
    assert stored.token_hash == hash_token(issued.secret)
    assert issued.secret not in {stored.token_hash, stored.prefix, stored.name}
    assert stored.prefix == issued.secret[:8]


def test_roles(session: Session) -> None:
    runner = create_token(session=session, name="runner", role=TokenRole.RUNNER).secret
    admin = create_token(session=session, name="admin", role=TokenRole.ADMIN).secret
    assert authenticate(session=session, secret=runner, required=TokenRole.RUNNER).name == "runner"
    assert authenticate(session=session, secret=admin, required=TokenRole.RUNNER).name == "admin"
    assert authenticate(session=session, secret=admin, required=TokenRole.ADMIN).last_used_at is not None
    with pytest.raises(Forbidden, match="admin token"):
        authenticate(session=session, secret=runner, required=TokenRole.ADMIN)


@pytest.mark.parametrize("secret", [None, "", "pt_unknown", "x" * 300])
def test_bad_secrets(session: Session, secret: str | None) -> None:
    with pytest.raises(AuthError):
        authenticate(session=session, secret=secret, required=TokenRole.RUNNER)


def test_revoked_token_stops_at_once(session: Session) -> None:
    secret = create_token(session=session, name="laptop", role=TokenRole.RUNNER).secret
    revoke_token(session=session, name="laptop")
    with pytest.raises(AuthError, match="revoked"):
        authenticate(session=session, secret=secret, required=TokenRole.RUNNER)


def test_names_are_unique_and_sane(session: Session) -> None:
    create_token(session=session, name="dup", role=TokenRole.RUNNER)
    with pytest.raises(Conflict):
        create_token(session=session, name="dup", role=TokenRole.ADMIN)
    with pytest.raises(InvalidInput):
        create_token(session=session, name="has space", role=TokenRole.RUNNER)


def test_bootstrap_admin_is_idempotent_and_follows_a_new_secret(session: Session) -> None:
    first = ensure_bootstrap_admin(session=session, secret="a" * 32)
    again = ensure_bootstrap_admin(session=session, secret="a" * 32)
    assert first.id == again.id
    rotated = ensure_bootstrap_admin(session=session, secret="b" * 32)
    assert rotated.id != first.id
    with pytest.raises(AuthError, match="revoked"):
        authenticate(session=session, secret="a" * 32, required=TokenRole.ADMIN)
    assert authenticate(session=session, secret="b" * 32, required=TokenRole.ADMIN).id == rotated.id
