"""A local webhook receiver: an httpx transport that records what it is sent and answers as told."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

Answer = Callable[[httpx.Request], httpx.Response]


@dataclass
class Receiver:
    """Records every delivery; answers 200 unless ``answers`` says otherwise (one per call, then 200)."""

    answers: list[Answer | int] = field(default_factory=list)
    got: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.got.append(request)
        if not self.answers:
            return httpx.Response(200, text="ok")
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else httpx.Response(answer, text="nope")

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handle))

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.got]


def signed_by(request: httpx.Request, secret: str) -> bool:
    """Whether the signature header is the HMAC-SHA256 of the raw body, as a receiver checks it."""
    expected = "sha256=" + hmac.new(secret.encode(), request.content, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request.headers.get("X-Perftrack-Signature-256", ""))
