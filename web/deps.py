"""FastAPI dependencies as ``Annotated`` aliases; handlers declare what they need by type.

A dependency that neither blocks nor waits is ``async def``: FastAPI runs a plain ``def``
dependency on a worker thread, one hand-off there and back per dependency per request (on the
claim path, about a tenth of a claim's CPU went to the hand-offs of the state, token and NUL
checks). Those that touch the database (sessions, token checks) stay plain functions, on threads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from tracker.access.tokens import authenticate
from tracker.enums import TokenRole
from tracker.errors import AuthError, Forbidden, InvalidInput
from tracker.models import ApiToken
from tracker.settings import Settings
from tracker.vcs.history import GitHistory
from web.auth import CSRF_FIELD, Account, WebSession, web_session_of
from web.state import AppState

_bearer = HTTPBearer(auto_error=False, description="A perftrack token (perftrack token create)")


async def get_state(request: Request) -> AppState:
    """The app's state, set up by ``create_app``."""
    state: AppState = request.app.state.perftrack
    return state


async def get_settings(state: Annotated[AppState, Depends(get_state)]) -> Settings:
    """The validated settings."""
    return state.settings


def get_session(state: Annotated[AppState, Depends(get_state)]) -> Iterator[Session]:
    """A read-only session for the request (never waits for a writer)."""
    yield from _scoped(state.read_sessions)


def get_write_session(state: Annotated[AppState, Depends(get_state)]) -> Iterator[Session]:
    """A session for a request that writes; the handler commits once, anything else is rolled back.

    It ends with the handler, before the answer is sent (``scope="function"``): what the handler
    leaves for after the answer (:mod:`web.followups`) writes in sessions of its own, and on SQLite
    must not wait for this one's write lock. Objects stay readable after it closes.
    """
    yield from _scoped(state.sessions)


def _scoped(factory: sessionmaker[Session]) -> Iterator[Session]:
    session = factory()
    try:
        yield session
    finally:
        session.close()  # uncommitted work is rolled back; loaded objects keep their values


SessionDep = Annotated[Session, Depends(get_session)]
WriteSessionDep = Annotated[Session, Depends(get_write_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_now(state: Annotated[AppState, Depends(get_state)]) -> dt.datetime:
    """The app clock's current time (UTC); tests give the app a clock they move."""
    return state.clock()


NowDep = Annotated[dt.datetime, Depends(get_now)]


async def get_history(settings: SettingsDep) -> GitHistory:
    """The git history reader bisection uses (mirrors under the data directory)."""
    return GitHistory(settings.git_cache_dir)


HistoryDep = Annotated[GitHistory, Depends(get_history)]
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _token(session: Session, credentials: HTTPAuthorizationCredentials | None, role: TokenRole) -> ApiToken:
    secret = credentials.credentials if credentials is not None else None
    token = authenticate(session=session, secret=secret, required=role)
    session.commit()  # record last_used_at even if the handler fails later
    return token


def require_runner(session: WriteSessionDep, credentials: BearerDep) -> ApiToken:
    """A valid runner or admin token."""
    return _token(session, credentials, TokenRole.RUNNER)


def require_admin(session: WriteSessionDep, credentials: BearerDep) -> ApiToken:
    """A valid admin token."""
    return _token(session, credentials, TokenRole.ADMIN)


async def runner_secret(credentials: BearerDep) -> str:
    """A runner token's secret, checked by the route itself in its own transaction (a claim reads
    the token and its runner together: :func:`tracker.queue.runners.claiming_runner`)."""
    if credentials is None or not credentials.credentials:
        raise AuthError("missing bearer token")
    return credentials.credentials


RunnerTokenDep = Annotated[ApiToken, Depends(require_runner)]
RunnerSecretDep = Annotated[str, Depends(runner_secret)]
AdminTokenDep = Annotated[ApiToken, Depends(require_admin)]


# NUL characters: PostgreSQL text cannot hold U+0000, so a path or query parameter carrying one is
# refused up front (422) instead of failing in the database. Bodies keep theirs as U+FFFD (see
# wire.InModel, the base of every request body): an upload must not be lost over a binary log.


async def refuse_nul_characters(request: Request) -> None:
    """Refuse (422) a NUL character in a path or query parameter."""
    for name, value in (*request.path_params.items(), *request.query_params.multi_items()):
        if "\x00" in name or "\x00" in str(value):
            raise InvalidInput(name.replace("\x00", ""), "contains a NUL character")


# Dashboard (HTML) sign-in: a signed session cookie, see web/auth.py.


async def get_web_session(request: Request) -> WebSession:
    """The signed session cookie's content for this request."""
    return web_session_of(request)


WebSessionDep = Annotated[WebSession, Depends(get_web_session)]


async def require_csrf(request: Request, web: WebSessionDep) -> None:
    """Refuse (403) a form POST whose CSRF field does not match the session's secret."""
    form = await request.form()
    submitted = form.get(CSRF_FIELD)
    if not web.csrf_matches(submitted if isinstance(submitted, str) else None):
        raise Forbidden("the form has expired or did not come from this site; reload the page and try again")


CsrfDep = Annotated[None, Depends(require_csrf)]


async def require_dashboard_admin(_csrf: CsrfDep, web: WebSessionDep) -> Account:
    """A signed-in admin posting a genuine form (the CSRF check runs first)."""
    account = web.account
    if account is None:
        raise Forbidden("sign in with an admin token to do this")
    return account


DashboardAdminDep = Annotated[Account, Depends(require_dashboard_admin)]
