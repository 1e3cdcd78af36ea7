"""Redirects that never send a client to the host its own ``Host`` header named.

The router answers ``/runs/`` with a 307 to ``/runs`` (and the reverse) and builds that ``Location``
as an absolute URL from the request's ``Host`` header: ``Host: evil.example`` would get
``Location: http://evil.example/runs`` (a poisoned cache or a link in a log sends someone there).
This middleware makes a ``Location`` that names the request's own ``Host`` relative (its path,
query and fragment), which every client resolves against the URL it actually asked. A redirect
to another host, or one already relative, is left as it is.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import URL
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def relative_location(location: str, own: str) -> str:
    """``location`` without scheme and host when it names ``own``, the host the request was sent to
    as the router reads it (its ``Host`` header, else the server's address)."""
    parts = urlsplit(location)
    if not parts.netloc or parts.netloc.lower() != own.lower():
        return location
    path = parts.path or "/"
    if path.startswith("//"):  # would read as another host: //evil.example/x
        path = "/%2F" + path[2:]
    query = f"?{parts.query}" if parts.query else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{path}{query}{fragment}"


class RelativeRedirects:
    """Pure ASGI middleware: each redirect's ``Location`` built from the ``Host`` header made relative."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        own = URL(scope=scope).netloc  # how the router builds a redirect's host

        async def send_relative(message: Message) -> None:
            if message["type"] == "http.response.start" and 300 <= message["status"] < 400:
                message = {
                    **message,
                    "headers": [_header(name, value, own) for name, value in message["headers"]],
                }
            await send(message)

        await self.app(scope, receive, send_relative)


def _header(name: bytes, value: bytes, own: str) -> tuple[bytes, bytes]:
    if name.lower() != b"location":
        return name, value
    return name, relative_location(value.decode("latin-1"), own).encode("latin-1")
