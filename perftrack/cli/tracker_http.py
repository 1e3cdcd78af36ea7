"""The commands' calls to a tracker's JSON API, through the one client (:mod:`runners.http`).

Each call the CLI makes is a function here, saying whether the tracker takes it twice: an import
(one result, or a batch) is stored once by its key, and a read is a read, so they are retried
briefly (a person waits on the command); a comparison request is sent once, as a repeat would
start a second comparison (it is sent again only when it never left). An unreachable tracker or a
refusal is a clean CLI failure naming the tracker and what it refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from perftrack.cli.common import fail, settings
from runners.http import InvalidMessage, RetryPolicy, TrackerError, TrackerHttp, TrackerUnavailable

# Rides out a tracker restarting (a few seconds of refused connections or 503s): 0.5 + 1 + 2 s.
CLI_RETRY = RetryPolicy(retries=3, backoff_s=0.5, max_backoff_s=4.0)


@contextmanager
def open_tracker(server: str, token: str) -> Iterator[TrackerHttp]:
    """A client of the tracker at ``server`` acting with ``token``, closed when the block ends."""
    timeout_s = settings().http_timeout_s
    with TrackerHttp.connect(
        server, token, timeout_s=timeout_s, user_agent="perftrack-cli", retry=CLI_RETRY
    ) as tracker:
        yield tracker


def post_result(tracker: TrackerHttp, payload: dict[str, Any]) -> dict[str, Any]:
    """Import one result (``POST /results``); a repeat answers with the run stored before."""
    return call_tracker(tracker, "POST", "/results", payload, idempotent=True, what="the result")


def post_results(tracker: TrackerHttp, payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Import results in one batch (``POST /results/batch``); a repeat's items are duplicates."""
    body = {"results": payloads}
    return call_tracker(tracker, "POST", "/results/batch", body, idempotent=True, what="the batch")


def request_comparison(tracker: TrackerHttp, body: dict[str, Any]) -> dict[str, Any]:
    """Start a comparison (``POST /comparisons``): sent once, a repeat would start another."""
    return call_tracker(tracker, "POST", "/comparisons", body, idempotent=False, what="the comparison")


def read_comparison(tracker: TrackerHttp, comparison_id: int) -> dict[str, Any]:
    """A comparison as it stands (``GET /comparisons/ID``)."""
    return call_tracker(tracker, "GET", f"/comparisons/{comparison_id}", what=f"comparison {comparison_id}")


def call_tracker(
    tracker: TrackerHttp,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    idempotent: bool | None = None,
    what: str | None = None,
) -> dict[str, Any]:
    """The tracker's JSON answer to ``method /api/v1{path}``; any failure fails the command.

    ``idempotent``: as :meth:`runners.http.TrackerHttp.request` takes it (a POST is sent again
    only when marked). The error names the tracker by its URL and the request as ``what``
    (default: ``METHOD /api/v1{path}``), with the status and the tracker's ``detail``.
    """
    where = tracker.server
    refused = what if what is not None else f"{method} /api/v1{path}"
    try:
        return tracker.json(method, path, json=body, idempotent=idempotent)
    except TrackerUnavailable as error:
        tried = f" (after {error.tries} tries)" if error.tries > 1 else ""
        if error.answered is None:
            fail(f"cannot reach {where}: {error.reason}{tried}")
        fail(f"{where} refused {refused} ({error.answered}): {error.reason}{tried}")
    except InvalidMessage as error:
        fail(f"{where} gave an unreadable answer to {refused}: {error.detail}")
    except TrackerError as error:
        fail(f"{where} refused {refused} ({error.status}): {error.detail}")
