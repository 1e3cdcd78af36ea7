"""``/login`` and ``/logout``: dashboard sign-in with an admin API token (see :mod:`web.auth`)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracker.access.sessions import end_session, prune_sessions, start_session
from tracker.access.throttle import (
    ThrottlePolicy,
    client_key,
    prune_throttles,
    record_failure,
    record_success,
    wait_for,
)
from tracker.access.tokens import authenticate
from tracker.enums import TokenRole
from tracker.errors import AuthError, Forbidden
from web.auth import Account, safe_next
from web.deps import CsrfDep, NowDep, SettingsDep, WebSessionDep, WriteSessionDep
from web.pages.templating import templates

router = APIRouter()


def _login_page(
    request: Request,
    *,
    next_path: str,
    error: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    return templates.TemplateResponse(
        request,
        "login.html",
        {"title": "Sign in", "next_path": next_path, "error": error},
        status_code=status,
        headers=headers,
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, web: WebSessionDep, next: str | None = None) -> Response:
    """The sign-in form: paste an admin API token."""
    if web.account is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return _login_page(request, next_path=safe_next(next))


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    _csrf: CsrfDep,
    web: WebSessionDep,
    session: WriteSessionDep,
    settings: SettingsDep,
    now: NowDep,
    token: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Check the token (admin role, not revoked); on success start a server-side session.

    Repeated failures from one address (or from everyone) make every sign-in from there wait:
    429 with ``Retry-After``, before the token is even looked at (see :mod:`tracker.access.throttle`).
    """
    target = safe_next(next)
    policy = ThrottlePolicy.from_settings(settings)
    client = client_key(request.client.host if request.client is not None else None)
    wait = wait_for(session=session, client=client, now=now)
    if wait is not None:
        seconds = max(1, math.ceil(wait.total_seconds()))
        return _login_page(
            request,
            next_path=target,
            status=429,
            headers={"Retry-After": str(seconds)},
            error=f"Too many failed sign-ins; try again in {seconds} s.",
        )
    try:
        account = authenticate(session=session, secret=token.strip(), required=TokenRole.ADMIN)
    except AuthError as error:
        record_failure(session=session, client=client, now=now, policy=policy)
        prune_throttles(session=session, now=now, window=policy.window)
        session.commit()
        if isinstance(error, Forbidden):
            return _login_page(
                request,
                next_path=target,
                status=403,
                error="That token is not an admin token; triage needs one.",
            )
        return _login_page(
            request, next_path=target, status=401, error="That token is unknown or has been revoked."
        )
    record_success(session=session, client=client)
    prune_sessions(session=session, now=now)
    started = start_session(
        session=session, token=account, now=now, lifetime=dt.timedelta(seconds=settings.session_max_age_s)
    )
    session.commit()  # the session row, and the token's last_used_at
    web.sign_in(Account(token_id=account.id, name=account.name), started.secret)
    return RedirectResponse(target, status_code=303)


@router.post("/logout")
def logout(_csrf: CsrfDep, web: WebSessionDep, session: WriteSessionDep, now: NowDep) -> Response:
    """End the session server-side, so no copy of the cookie works any more (a genuine form only)."""
    if web.session_id is not None:
        end_session(session=session, secret=web.session_id, now=now)
        session.commit()
    web.sign_out()
    return RedirectResponse("/", status_code=303)
