"""The fake GitHub for the bot's tests, held to GitHub's published description.

The fake itself (state, routes, GitHub's shapes) is :mod:`perftrack.fakegithub`, which the demo
serves too. This subclass adds what the tests need around it: every fake made is kept in
:data:`MADE`, and :meth:`FakeGithub.transport` serves it in-process through an
``httpx.MockTransport``, recording every exchange (``exchanges``) for the contract check against
GitHub's published description (``github_contract``, run after each test by tests/conftest.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx
from fastapi.testclient import TestClient

from perftrack import fakegithub
from perftrack.fakegithub import Call
from tests.fakes.github_contract import Exchange

ENTERPRISE_PREFIX = "/api/v3"
# Every fake made, in order: tests/conftest.py holds each test's fakes' exchanges to GitHub's description.
MADE: list[FakeGithub] = []


@dataclass
class FakeGithub(fakegithub.FakeGithub):
    """:class:`perftrack.fakegithub.FakeGithub`, registered for the contract check, with an
    in-process transport."""

    # Every request and answer, for the contract check (tests/fakes/github_contract.py).
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        MADE.append(self)

    def transport(self) -> httpx.MockTransport:
        """An httpx transport that hands every request to the fake's app (GitHub Enterprise's
        ``/api/v3`` prefix is accepted too)."""
        client = TestClient(self.app(), raise_server_exceptions=True)

        def handle(request: httpx.Request) -> httpx.Response:
            path = request.url.raw_path.decode().removeprefix(ENTERPRISE_PREFIX)
            answer = client.request(
                request.method,
                path,
                headers={key: value for key, value in request.headers.items() if key.lower() != "host"},
                content=request.content,
            )
            self.exchanges.append(
                Exchange(
                    method=request.method,
                    path=path,
                    body=json.loads(request.content) if request.content else None,
                    status=answer.status_code,
                    headers={key.lower(): value for key, value in answer.headers.items()},
                    answer=answer.json() if answer.content else None,
                )
            )
            return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

        return httpx.MockTransport(handle)


__all__ = ["MADE", "Call", "FakeGithub"]
