"""Map tracker errors and validation failures to JSON responses: one handler, no tracebacks."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tracker.errors import (
    AuthError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    PerftrackError,
)
from tracker.schemas import describe_errors
from web.pages.templating import templates

logger = logging.getLogger("perftrack.web")

_STATUS: list[tuple[type[PerftrackError], int]] = [
    (Forbidden, 403),
    (AuthError, 401),
    (InvalidInput, 422),
    (PayloadTooLarge, 413),
    (NotFound, 404),
    (Conflict, 409),
]


def status_for(error: PerftrackError) -> int:
    """The HTTP status that stands for a tracker error."""
    for cls, status in _STATUS:
        if isinstance(error, cls):
            return status
    return 400


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(PerftrackError)
    async def _perftrack_error(request: Request, error: PerftrackError) -> Response:
        status = status_for(error)
        if _wants_html(request):
            return _html_error(request, status, str(error))
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        body: dict[str, object] = {"detail": str(error)}
        if isinstance(error, InvalidInput):
            body["field"] = error.field
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = [
            {key: value for key, value in problem.items() if key in ("loc", "msg", "type")}
            for problem in error.errors()
        ]
        return JSONResponse({"detail": describe_errors(problems), "errors": problems}, status_code=422)

    @app.exception_handler(ValidationError)
    async def _model_invalid(_request: Request, error: ValidationError) -> JSONResponse:
        problems = [
            {key: value for key, value in problem.items() if key in ("loc", "msg", "type")}
            for problem in error.errors(include_url=False)
        ]
        return JSONResponse({"detail": describe_errors(problems), "errors": problems}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
        if _wants_html(request):
            return _html_error(request, error.status_code, str(error.detail))
        return JSONResponse({"detail": error.detail}, status_code=error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> Response:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        if _wants_html(request):
            return _html_error(request, 500, "Something went wrong; the server log has the details.")
        return JSONResponse({"detail": "internal error; see the server log"}, status_code=500)


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
