"""``/login`` and ``/logout``: dashboard sign-in with an admin API token (see :mod:`web.auth`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tracker.errors import AuthError, Forbidden
from tracker.models import TokenRole
from tracker.tokens import authenticate
from web.auth import safe_next
from web.deps import CsrfDep, WebSessionDep, WriteSessionDep
from web.pages.templating import templates

router = APIRouter()


def _login_page(request: Request, *, next_path: str, error: str | None = None, status: int = 200) -> Response:
    return templates.TemplateResponse(
        request,
        "login.html",
        {"title": "Sign in", "next_path": next_path, "error": error},
        status_code=status,
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
    token: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Check the token (admin role, not revoked); on success start a signed session."""
    target = safe_next(next)
    try:
        account = authenticate(session=session, secret=token.strip(), required=TokenRole.ADMIN)
    except Forbidden:
        return _login_page(
            request, next_path=target, status=403, error="That token is not an admin token; triage needs one."
        )
    except AuthError:
        return _login_page(
            request, next_path=target, status=401, error="That token is unknown or has been revoked."
        )
    session.commit()  # records last_used_at
    web.sign_in(account)
    return RedirectResponse(target, status_code=303)


@router.post("/logout")
def logout(_csrf: CsrfDep, web: WebSessionDep) -> Response:
    """End the session (a genuine form only: the CSRF check runs first)."""
    web.sign_out()
    return RedirectResponse("/", status_code=303)
