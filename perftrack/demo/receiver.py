"""A webhook receiver for the demo's notifications: a small HTTP server on a localhost thread.

It takes what the tracker's two subscriptions send: ``/slack`` a Slack-compatible body (Slack's
incoming webhooks carry no signature), ``/json`` the generic JSON, whose
``X-Perftrack-Signature-256`` it checks as a receiver should (HMAC-SHA256 of the raw body under the
shared secret, compared in constant time). A delivery with a bad or missing signature is answered
401 and kept as a failure, so the scorecard sees it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLACK_PATH = "/slack"
JSON_PATH = "/json"
SIGNATURE_HEADER = "X-Perftrack-Signature-256"
EVENT_HEADER = "X-Perftrack-Event"
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Received:
    """One delivery: which subscription's path, the event, its title, and whether it was signed right
    (``None``: the format carries no signature)."""

    path: str
    event: str
    title: str
    verified: bool | None


@dataclass
class Inbox:
    """What the receiver got, in order (shared with the server's threads)."""

    secret: str
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, path: str, headers: dict[str, str], body: bytes) -> bool:
        """Keep one delivery; whether it is accepted (a generic one must be signed right)."""
        event = headers.get(EVENT_HEADER.lower(), "")
        document = _json(body)
        verified: bool | None = None
        if path == JSON_PATH:
            expected = "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
            verified = hmac.compare_digest(headers.get(SIGNATURE_HEADER.lower(), ""), expected)
            title = str(document.get("title", ""))
        else:
            title = str(document.get("text", "")).split("\n", 1)[0]
        with self.lock:
            self.received.append(Received(path, event, title, verified))
        return verified is not False

    def snapshot(self) -> list[Received]:
        """A copy of what arrived so far."""
        with self.lock:
            return list(self.received)


def _json(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        body = self.rfile.read(length)
        known = self.path in (SLACK_PATH, JSON_PATH)
        headers = {key.lower(): value for key, value in self.headers.items()}
        accepted = known and self.server.inbox.take(self.path, headers, body)
        self.send_response(200 if accepted else (401 if known else 404))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the demo prints what arrived at its end."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, inbox: Inbox) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.inbox = inbox


@contextmanager
def receiving(secret: str) -> Iterator[tuple[str, Inbox]]:
    """Run the receiver on a free localhost port until the block ends; yields its base URL and inbox."""
    inbox = Inbox(secret)
    server = _Server(inbox)
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="webhook-receiver")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", inbox
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
