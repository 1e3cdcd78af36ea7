"""The fake GitHub's FastAPI app: records every call, answers planned failures, then routes.

Served in-process to tests (``tests/fakes/fake_github.py`` wraps it in an ``httpx.MockTransport``)
or over HTTP on localhost by the demo (:mod:`perftrack.demo.github`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from perftrack.fakegithub import shapes
from perftrack.fakegithub.auth import fake_of
from perftrack.fakegithub.routes import accounts_router, checks_router, pulls_router

if TYPE_CHECKING:
    from perftrack.fakegithub.state import FakeGithub


def build_app(fake: FakeGithub) -> FastAPI:
    """The app serving ``fake``'s state in GitHub's REST shapes."""
    app = FastAPI()
    app.state.fake = fake
    app.middleware("http")(_record)
    app.add_exception_handler(HTTPException, _github_error)  # type: ignore[arg-type]
    for router in (accounts_router, pulls_router, checks_router):
        app.include_router(router)
    return app


async def _record(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Keep the call (:class:`~perftrack.fakegithub.state.Call`); answer a planned failure instead of
    the route when one is due."""
    fake = fake_of(request)
    raw = await request.body()
    body = json.loads(raw) if raw else None
    if fake.hold is not None:
        fake.hold.wait(timeout=120)
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    authorization = request.headers.get("authorization", "")
    failure = fake.take_failure(request.method, path)
    if failure is not None:
        if failure.carried_out:
            await call_next(request)
        fake.record(request.method, path, failure.status, authorization, body)
        return JSONResponse(failure.body, status_code=failure.status, headers=failure.headers)
    response = await call_next(request)
    fake.record(request.method, path, response.status_code, authorization, body)
    return response


async def _github_error(_request: Request, error: HTTPException) -> JSONResponse:
    return JSONResponse(shapes.error(str(error.detail)), status_code=error.status_code)
