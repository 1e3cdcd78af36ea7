"""Calling a tracker's JSON API from a command: an unreachable tracker or a refusal is a clean CLI failure."""

from __future__ import annotations

from typing import Any

import httpx

from perftrack.cli.common import fail


def call_tracker(
    client: httpx.Client,
    method: str,
    url: str,
    body: dict[str, Any] | None = None,
    *,
    server: str | None = None,
    what: str | None = None,
) -> dict[str, Any]:
    """The tracker's JSON answer to ``method url``; anything but 200 or 201 fails the command.

    The error names the tracker as ``server`` (default: the client's base URL) and the request as
    ``what`` (default: ``METHOD URL``), with the status and the tracker's ``detail``.
    """
    where = server if server is not None else str(client.base_url)
    try:
        response = client.request(method, url, json=body)
    except httpx.HTTPError as error:
        fail(f"cannot reach {where}: {error}")
    if response.status_code not in (200, 201):
        refused = what if what is not None else f"{method} {url}"
        fail(f"{where} refused {refused} ({response.status_code}): {_detail(response)}")
    answer: dict[str, Any] = response.json()
    return answer


def _detail(response: httpx.Response) -> Any:
    """Why the tracker refused: its ``detail``, else the start of the body."""
    try:
        return response.json().get("detail", response.text)
    except ValueError:
        return response.text[:500]
