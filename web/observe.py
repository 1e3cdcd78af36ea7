"""Every request: a request id, one access log line, and the HTTP metrics (pure ASGI middleware)."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracker.observability.log_config import request_id
from tracker.observability.metrics import record_request

access_logger = logging.getLogger("perftrack.access")
REQUEST_ID_HEADER = "X-Request-ID"
# A client's id is kept only if it is short and plain (it is echoed and logged); else a new one.
# No underscore: a perftrack token (pt_...) can never pass for a request id.
_REQUEST_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:\-]{0,63}")
UNMATCHED_ROUTE = "<unmatched>"


def incoming_request_id(scope: Scope) -> str:
    """The request's ``X-Request-ID`` if it is acceptable (1-64 letters, digits, ``.``, ``:``,
    ``-``), else a new random one."""
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            candidate = bytes(value).decode("latin-1")
            if _REQUEST_ID_SHAPE.fullmatch(candidate):
                return candidate
            break
    return uuid.uuid4().hex


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/api/v1/runs/{run_id}``), never the raw path.

    A route of an included router knows its path below the including routers' prefixes only
    (``/runs/{run_id}``); the prefix is the part of the request path before the suffix that the
    route's own pattern matches (perftrack's router prefixes are plain, with no parameters).
    """
    route = scope.get("route") or _plain_route(scope)
    template = getattr(route, "path", None)
    if not isinstance(template, str) or not template:
        return UNMATCHED_ROUTE
    pattern = getattr(route, "path_regex", None)
    path = str(scope.get("path", ""))
    if isinstance(pattern, re.Pattern):
        for cut in (index for index, char in enumerate(path) if char == "/"):
            if pattern.match(path[cut:]):
                return path[:cut] + template
    return template


def _plain_route(scope: Scope) -> BaseRoute | None:
    """The top-level Starlette route or mount (``/static``, ``/openapi.json``) that took the request.

    FastAPI names only its own API routes in ``scope["route"]``; mounts and plain routes are found
    again by matching the original path against the app's top-level routes.
    """
    router = scope.get("router")
    original = {"type": "http", "path": scope.get("path", ""), "root_path": "", "method": scope.get("method")}
    for route in getattr(router, "routes", ()):
        if isinstance(route, Mount | Route) and route.matches(original)[0] is Match.FULL:
            return route
    return None


class RequestObserver:
    """Outermost middleware: times the whole exchange, including refusals by inner middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = incoming_request_id(scope)
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.lower().encode(), rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            method = str(scope.get("method", ""))
            record_request(method=method, route=route_template(scope), status=status, seconds=seconds)
            access_logger.info(
                "%s %s %d %.1f ms",
                method,
                scope.get("path", ""),
                status,
                seconds * 1000,
                extra={
                    "method": method,
                    "path": scope.get("path", ""),
                    "status": status,
                    "duration_ms": round(seconds * 1000, 3),
                },
            )
            request_id.reset(token)
