"""Security headers on every answer: Content-Security-Policy, no framing, no MIME sniffing, referrer.

The pages run only scripts served from this origin (``/static``, ``/vendor``): no inline script, no
event-handler attribute, no ``eval``; the JSON the charts read sits in ``<script
type="application/json">`` blocks, which are data, never run. Styles may be inline because
plotly.js adds ``<style>`` rules and ``style`` attributes as it draws (a style cannot run code).
``/docs`` and ``/redoc`` are the exception: Swagger UI and ReDoc, as FastAPI ships them, start from
an inline script and ReDoc works in a ``blob:`` worker, so those two pages (which show only the
API's own schema) get a policy allowing that.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
DOCS_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
DOCS_PATHS = ("/docs", "/redoc")
SECURITY_HEADERS = (
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
)


def policy_for(path: str) -> str:
    """The Content-Security-Policy for an answer to ``path``."""
    if any(path == docs or path.startswith(docs + "/") for docs in DOCS_PATHS):
        return DOCS_POLICY
    return PAGE_POLICY


class SecurityHeaders:
    """Adds the security headers to every HTTP answer that does not set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = policy_for(str(scope.get("path", "")))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in (("Content-Security-Policy", policy), *SECURITY_HEADERS):
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
