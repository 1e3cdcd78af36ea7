"""The error body every API failure answers with, and the ``responses=`` each route declares.

One shape for all of them (see web/errors.py): ``detail`` is a sentence; ``field`` names the bad
field of a tracker ``InvalidInput``; ``errors`` lists request-validation problems (never the input
value, which may be a secret).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ProblemOut(BaseModel):
    """One request-validation problem: where it is, what is wrong, and its kind."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorOut(BaseModel):
    """The body of every 4xx (and 5xx) answer of the API."""

    detail: str = Field(description="what went wrong, in a sentence")
    field: str | None = Field(default=None, description="dotted path of the offending field, if one")
    errors: list[ProblemOut] | None = Field(default=None, description="request-validation problems")


_DEFAULTS = {
    400: "The body could not be parsed (not JSON, or not UTF-8)",
    401: "Missing, malformed, unknown or revoked bearer token",
    403: "The token is valid but lacks the admin role",
    404: "No such object",
    409: "The request contradicts stored state",
    413: "Request body or log over the configured size limit",
    422: "Invalid input: the message names the field",
}
RUNNER = (401,)  # what a route guarded by a runner (or admin) token adds
# The 403 of a route where a runner acts: identity comes from its token, and only a runner token has one.
NOT_THIS_RUNNER = "An admin token, or a runner token acting as another runner than its own"
ADMIN = (401, 403)  # what a route guarded by an admin token adds
BODY = (400, 413, 422)  # what a route with a request body adds


def errors(*statuses: int | tuple[int, ...], notes: dict[int, str] | None = None) -> dict[int | str, Any]:
    """``responses=`` for a route: each status with the ``ErrorOut`` body and a description.

    ``statuses`` may mix codes and the tuples above; ``notes`` overrides a description.
    """
    flat: list[int] = []
    for status in statuses:
        flat.extend(status if isinstance(status, tuple) else (status,))
    described = {**_DEFAULTS, **(notes or {})}
    return {
        status: {"model": ErrorOut, "description": described.get(status, "Error")} for status in sorted(flat)
    }
