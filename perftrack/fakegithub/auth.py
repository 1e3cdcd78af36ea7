"""Who may call the fake GitHub: an App's JSON web token for the App's own endpoints, an issued
installation token (App mode) or any bearer token (token mode) for the rest, as GitHub checks them."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import jwt
from fastapi import HTTPException, Request

if TYPE_CHECKING:
    from perftrack.fakegithub.state import FakeGithub

# GitHub refuses an App token that lives longer than ten minutes.
MAX_APP_TOKEN_S = 600


def fake_of(request: Request) -> FakeGithub:
    """The state the app serves."""
    return cast("FakeGithub", request.app.state.fake)


def require_installation_token(request: Request) -> FakeGithub:
    """The fake, once the call carries a token it accepts (401 otherwise)."""
    fake = fake_of(request)
    header = request.headers.get("authorization", "")
    if fake.app_public_key is None:
        if not header.startswith("Bearer "):
            raise HTTPException(401, "Requires authentication")
        return fake
    if header.removeprefix("Bearer ") not in fake.issued_tokens:
        raise HTTPException(401, "Bad credentials")
    return fake


def require_app_jwt(request: Request) -> FakeGithub:
    """The fake, once the call carries a JSON web token the App's key signed, valid at the fake's time."""
    fake = fake_of(request)
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if fake.app_public_key is None:
        raise HTTPException(401, "A JSON web token could not be decoded: this fake has no App")
    try:
        # Checked against the fake's clock, not the machine's: tests run at a fixed time.
        claims = jwt.decode(
            token,
            fake.app_public_key,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False},
        )
    except jwt.PyJWTError as error:
        raise HTTPException(401, f"A JSON web token could not be decoded: {type(error).__name__}") from None
    now = fake.current_time().timestamp()
    if not claims["iat"] <= now < claims["exp"] or claims["exp"] - claims["iat"] > MAX_APP_TOKEN_S:
        raise HTTPException(401, "'Expiration time' claim ('exp') is too far in the future or past")
    return fake
