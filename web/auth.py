"""Dashboard sign-in and CSRF protection.

A signed-in admin pastes an admin API token once; the server checks it with
:func:`tracker.access.tokens.authenticate` and starts a server-side session
(:mod:`tracker.access.sessions`). The cookie (itsdangerous-signed, HttpOnly, SameSite=Lax,
Secure over https) carries the session's random id, never the token, and a random CSRF secret:
every form carries it in a hidden ``csrf_token`` field and every POST compares the two in constant
time. On each request :class:`WebSessionMiddleware` looks the session up: a cookie whose session
is unknown, expired, signed out (revoked) or whose token was revoked or demoted is treated as
signed out, so a copied cookie dies with the session it names.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracker import db
from tracker.access.sessions import live_session, touch_session
from web.state import AppState

COOKIE = "perftrack_session"
CSRF_FIELD = "csrf_token"
_SALT = "perftrack.web-session"
# What the cookie may hold: the session id (signed in only), the CSRF secret, a flash message.
_SESSION_ID, _CSRF, _FLASH = "sid", "csrf", "flash"


@dataclass(frozen=True)
class Account:
    """Who is signed in: the admin token's id and name (never its secret)."""

    token_id: int
    name: str


class WebSession:
    """The signed cookie's content for one request; changes are written back on the response.

    ``account`` is set by :class:`WebSessionMiddleware` once the server-side session checks out;
    the cookie alone never signs anyone in.
    """

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        raw = dict(data or {})
        self.data: dict[str, Any] = {key: raw[key] for key in (_SESSION_ID, _CSRF, _FLASH) if key in raw}
        self.modified = len(self.data) != len(raw)  # an older cookie's leftovers are dropped
        self.account: Account | None = None

    @property
    def session_id(self) -> str | None:
        """The server-side session the cookie names (its random id), if any."""
        value = self.data.get(_SESSION_ID)
        return value if isinstance(value, str) and value else None

    def csrf_token(self) -> str:
        """This session's CSRF secret, created on first use."""
        token = self.data.get(_CSRF)
        if not isinstance(token, str) or not token:
            token = secrets.token_urlsafe(32)
            self.data[_CSRF] = token
            self.modified = True
        return token

    def csrf_matches(self, submitted: str | None) -> bool:
        """Whether a submitted form token is this session's (constant time)."""
        expected = self.data.get(_CSRF)
        if not isinstance(expected, str) or not expected or not submitted:
            return False
        return hmac.compare_digest(submitted.encode(), expected.encode())

    def sign_in(self, account: Account, session_id: str) -> None:
        """Name a server-side session just started; a fresh CSRF secret defeats session fixation."""
        self.data = {_SESSION_ID: session_id, _CSRF: secrets.token_urlsafe(32)}
        self.account = account
        self.modified = True

    def sign_out(self) -> None:
        """Forget the session, the account and the CSRF secret (the caller ends the server side)."""
        self.data = {}
        self.account = None
        self.modified = True

    def flash(self, kind: str, message: str) -> None:
        """A message for the next page shown (``ok`` or ``error``)."""
        self.data[_FLASH] = [kind, message]
        self.modified = True

    def pop_flash(self) -> tuple[str, str] | None:
        """The pending flash message, removed."""
        value = self.data.pop(_FLASH, None)
        if value is None:
            return None
        self.modified = True
        kind, message = value
        return str(kind), str(message)


def web_session_of(connection: HTTPConnection) -> WebSession:
    """The request's session (an empty one where the middleware is not installed)."""
    state: dict[str, Any] = connection.scope.setdefault("state", {})
    web = state.get("web_session")
    if not isinstance(web, WebSession):
        web = WebSession()
        state["web_session"] = web
    return web


def signed_in_account(state: AppState, session_id: str) -> Account | None:
    """The account of the live server-side session ``session_id`` names (touched now and then)."""
    now = state.clock()
    with state.read_sessions() as session:
        live = live_session(session=session, secret=session_id, now=now)
    if live is None:
        return None
    if live.needs_touch:
        with db.session_scope(state.sessions) as session:
            touch_session(session=session, session_id=live.session_id, now=now)
    return Account(token_id=live.token_id, name=live.token_name)


class WebSessionMiddleware:
    """Load the signed session cookie into ``request.state.web_session``; write it back if changed."""

    def __init__(self, app: ASGIApp, *, secret: str, max_age_s: int) -> None:
        self.app = app
        self.max_age_s = max_age_s
        self.serializer = URLSafeTimedSerializer(secret, salt=_SALT)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(("/static/", "/vendor/", "/api/")):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        raw = connection.cookies.get(COOKIE)
        data = self._load(raw) if raw else None
        web = WebSession(data)
        if raw and data is None:
            web.modified = True  # an expired or forged cookie: replace it with an empty one
        session_id = web.session_id
        if session_id is not None:
            state: AppState = scope["app"].state.perftrack
            web.account = await anyio.to_thread.run_sync(signed_in_account, state, session_id)
            if web.account is None:
                web.sign_out()  # unknown, expired, signed out, or its token revoked
        scope.setdefault("state", {})["web_session"] = web
        secure = scope.get("scheme") == "https"

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and web.modified:
                headers = MutableHeaders(scope=message)
                headers.append("Set-Cookie", self._cookie(web.data, secure=secure))
                headers.append("Cache-Control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    def _load(self, raw: str) -> dict[str, Any] | None:
        try:
            value = self.serializer.loads(raw, max_age=self.max_age_s)
        except BadSignature:  # also covers SignatureExpired
            return None
        return value if isinstance(value, dict) else None

    def _cookie(self, data: dict[str, Any], *, secure: bool) -> str:
        if data:
            value, max_age = self.serializer.dumps(data), self.max_age_s
        else:
            value, max_age = "", 0
        flags = "; Secure" if secure else ""
        return f"{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{flags}"


def safe_next(target: str | None, default: str = "/alerts") -> str:
    """A local path to go back to after signing in (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target


def template_context(request: Any) -> dict[str, Any]:
    """Jinja context processor: the signed-in account and a lazy ``csrf_token()`` for forms."""
    web = web_session_of(request)
    return {"account": web.account, "csrf_token": web.csrf_token, "csrf_field": CSRF_FIELD}
