"""Map tracker errors and validation failures to JSON responses: one handler, no tracebacks.

Error messages may quote what the caller sent (``unknown case 'x'``); before one goes out, every
secret the one redactor knows (token shapes of perftrack, GitHub and the rest, credentials, every
configured secret: :mod:`tracker.access.redaction`) is replaced by ``[redacted]``, so a
token pasted into the wrong field never comes back in a response (validation errors never carry
the ``input`` either).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tracker.access.redaction import Redactor, secret_values
from tracker.errors import (
    AuthError,
    Conflict,
    ExternalServiceError,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    PerftrackError,
)
from web.pages.templating import templates
from wire import MAX_JSON_DEPTH, describe_errors, escape_unencodable

logger = logging.getLogger("perftrack.web")


def redact(request: Request, text: str) -> str:
    """``text`` without token-shaped strings, credentials or any secret the settings hold (the one
    redactor, as for logs and stored runs: :class:`tracker.access.redaction.Redactor` over
    :func:`tracker.access.redaction.secret_values`)."""
    state = getattr(request.app.state, "perftrack", None)
    secrets = secret_values(state.settings) if state is not None else []
    return Redactor(secrets).text(text)


def _problems(request: Request, errors: Any) -> list[dict[str, Any]]:
    """Validation problems as loc, msg and type only (never the input), redacted, each lone surrogate
    of a key sent escaped (no JSON answer could carry it)."""
    return [
        {
            "loc": [
                redact(request, escape_unencodable(part)) if isinstance(part, str) else part
                for part in problem.get("loc", ())
            ],
            "msg": redact(request, escape_unencodable(str(problem.get("msg", "")))),
            "type": str(problem.get("type", "")),
        }
        for problem in errors
    ]


_STATUS: list[tuple[type[PerftrackError], int]] = [
    (Forbidden, 403),
    (AuthError, 401),
    (InvalidInput, 422),
    (PayloadTooLarge, 413),
    (NotFound, 404),
    (Conflict, 409),
    (ExternalServiceError, 502),
]


def status_for(error: PerftrackError) -> int:
    """The HTTP status that stands for a tracker error."""
    for cls, status in _STATUS:
        if isinstance(error, cls):
            return status
    return 400


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.exception_handler(PerftrackError)(_perftrack_error)
    app.exception_handler(RequestValidationError)(_request_invalid)
    app.exception_handler(ValidationError)(_model_invalid)
    app.exception_handler(StarletteHTTPException)(_http_error)
    app.exception_handler(InterfaceError)(_database_unavailable)
    app.exception_handler(OperationalError)(_database_unavailable)
    app.exception_handler(Exception)(_unexpected)


async def _perftrack_error(request: Request, error: PerftrackError) -> Response:
    """A tracker error: its status (:func:`status_for`) and its message, redacted."""
    status = status_for(error)
    if _wants_html(request):
        return _html_error(request, status, redact(request, str(error)))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body: dict[str, object] = {"detail": redact(request, str(error))}
    if isinstance(error, InvalidInput):
        body["field"] = error.field
    return JSONResponse(body, status_code=status, headers=headers)


async def _request_invalid(request: Request, error: RequestValidationError) -> Response:
    """A request FastAPI could not validate: 422, or 404 for a page that cannot exist."""
    problems = _problems(request, error.errors())
    if _wants_html(request) and any(_names_a_page(problem["loc"]) for problem in problems):
        # /runs/99999999999999999999999 or /jobs?id=abc: no such page, rather than a form error.
        return _html_error(request, 404, describe_errors(problems))
    if _wants_html(request):  # a bad filter (?limit=abc) or form field: still a page, not JSON
        return _html_error(request, 422, describe_errors(problems))
    return JSONResponse({"detail": describe_errors(problems), "errors": problems}, status_code=422)


async def _model_invalid(request: Request, error: ValidationError) -> JSONResponse:
    """A body a handler validated itself (a pydantic model): 422 with the problems."""
    problems = _problems(request, error.errors(include_url=False))
    return JSONResponse({"detail": describe_errors(problems), "errors": problems}, status_code=422)


async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
    """An HTTP error raised by FastAPI or Starlette (404, 405, a body nested too deeply)."""
    if isinstance(error.__cause__, RecursionError):
        # FastAPI's json.loads gave up on a body nested thousands of levels deep.
        return JSONResponse(
            {"detail": f"body: JSON nested too deeply (the limit is {MAX_JSON_DEPTH} levels)"},
            status_code=422,
        )
    detail = redact(request, str(error.detail))
    if _wants_html(request):
        return _html_error(request, error.status_code, detail)
    return JSONResponse({"detail": detail}, status_code=error.status_code, headers=error.headers)


async def _database_unavailable(request: Request, error: Exception) -> Response:
    """The database is down, restarting or locked: a passing state clients should retry (503)."""
    logger.warning("database unavailable on %s %s: %s", request.method, request.url.path, error)
    headers = {"Retry-After": "5"}
    message = "the database is unavailable; retry shortly"
    if _wants_html(request):
        page = _html_error(request, 503, message)
        page.headers.update(headers)
        return page
    return JSONResponse({"detail": message}, status_code=503, headers=headers)


async def _unexpected(request: Request, error: Exception) -> Response:
    """Anything else: logged with its traceback, answered with a plain 500."""
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    if _wants_html(request):
        return _html_error(request, 500, "Something went wrong; the server log has the details.")
    return JSONResponse({"detail": "internal error; see the server log"}, status_code=500)


def _names_a_page(loc: list[Any]) -> bool:
    """Whether a validation problem is about which page was asked for: a path parameter or ``?id=``."""
    return bool(loc) and (loc[0] == "path" or loc[:2] == ["query", "id"])


def _wants_html(request: Request) -> bool:
    """Pages get an HTML error page; the API and health check get JSON."""
    path = request.url.path
    return not (path.startswith(("/api/", "/static/")) or path == "/healthz")


def _html_error(request: Request, status: int, message: str) -> Response:
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status_code": status, "message": message, "title": str(status)},
        status_code=status,
    )
