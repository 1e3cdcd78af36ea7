"""The one HTTP client of the tracker's JSON API (``/api/v1``), for the runner agent and the CLI.

What is sent again, with capped exponential backoff, is only what is safe to send again:

- a request the tracker treats idempotently (every GET; a POST the caller marks ``idempotent``
  because its repeat changes nothing, e.g. a result the tracker stores once by its key), after a
  connection error, a timeout, 429 or a 5xx answer;
- any other request only when it never left: the connection could not be made, or no pooled
  connection freed up. A lost answer to a claim or to a comparison request is not sent again:
  the repeat would lease another job, or start another comparison.

Errors, all carrying ``status`` (the HTTP status; 0: no answer to report) and ``detail``::

    TrackerError                 the tracker refused the request (4xx, or a 5xx never retried)
    ├── TrackerUnavailable       not reached, or 429/5xx, after every try the request allows
    └── InvalidMessage           a body or an answer that does not fit the wire format

The runner's endpoints are :class:`runners.client.TrackerClient`; the CLI turns these errors into
clean failures (:mod:`perftrack.cli.tracker_http`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_base,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
)

API = "/api/v1"
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# Methods whose repeat is harmless by definition (RFC 9110 §9.2.2); a POST has to be marked so.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Failures that mean the request never reached the tracker: safe to send any request again.
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class TrackerError(Exception):
    """The tracker refused a request; ``status`` is the HTTP status (0: never reached)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail


class TrackerUnavailable(TrackerError):
    """The tracker could not be reached, or kept answering 429/5xx, after every try allowed.

    ``answered``: the status of the last answer (``None``: never reached); ``reason``: the last
    transport error, or the tracker's detail; ``tries``: how many requests were sent (or tried).
    """

    def __init__(self, request: str, *, answered: int | None, reason: str, tries: int) -> None:
        problem = (
            f"cannot reach the tracker: {reason}"
            if answered is None
            else f"tracker answered {answered}: {reason}"
        )
        super().__init__(0, f"{request}: {problem} (after {tries} tries)")
        self.answered = answered
        self.reason = reason
        self.tries = tries


class InvalidMessage(TrackerError):
    """A body that would be sent, or an answer that was got, does not fit the wire format.

    ``status`` is 0 for a body refused before sending (the tracker would answer 422 with the same
    message), else the status of the answer that could not be read.
    """


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and how patiently, a request that may be sent again is sent again."""

    retries: int = 5  # tries after the first
    backoff_s: float = 1.0  # the first wait; doubled each time
    max_backoff_s: float = 60.0


class TrackerHttp:
    """Requests to one tracker's JSON API through ``http``, an httpx client whose base URL is the
    tracker and whose headers carry its token (:meth:`connect` makes one)."""

    def __init__(
        self,
        http: httpx.Client,
        *,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http = http
        self.retry = retry
        self._sleep = sleep

    @classmethod
    def connect(
        cls,
        server: str,
        token: str,
        *,
        timeout_s: float = 30.0,
        user_agent: str = "perftrack",
        retry: RetryPolicy = RetryPolicy(),
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> TrackerHttp:
        """A client of the tracker at ``server`` (its root URL) acting with ``token``."""
        http = httpx.Client(
            base_url=server,
            headers={"Authorization": f"Bearer {token}", "User-Agent": user_agent},
            timeout=timeout_s,
            transport=transport,
        )
        return cls(http, retry=retry, sleep=sleep)

    @property
    def server(self) -> str:
        """The tracker's root URL, as errors name it."""
        return str(self._http.base_url).rstrip("/")

    @property
    def timeout(self) -> httpx.Timeout:
        """The timeouts every request gets unless it says otherwise."""
        return self._http.timeout

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> TrackerHttp:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool | None = None,
        retries: int | None = None,
        **options: Any,
    ) -> httpx.Response:
        """``method`` on ``/api/v1`` + ``path``: the answer (2xx or 3xx), else a :class:`TrackerError`.

        ``idempotent``: whether sending the request twice is as good as once (default: by the
        method; a POST is not unless marked). ``retries``: tries after the first, instead of the
        policy's. ``options``: what :meth:`httpx.Client.request` takes (``json``, ``params``, ...).
        """
        safe = method.upper() in IDEMPOTENT_METHODS if idempotent is None else idempotent
        tries = (self.retry.retries if retries is None else retries) + 1
        retrying = Retrying(
            stop=stop_after_attempt(tries),
            wait=wait_exponential(multiplier=self.retry.backoff_s, max=self.retry.max_backoff_s),
            retry=_retry_on(safe=safe),
            sleep=self._sleep,
            retry_error_callback=_last_outcome,
        )
        what = f"{method} {path}"
        try:
            response: httpx.Response = retrying(self._http.request, method, API + path, **options)
        except httpx.TransportError as error:
            reason = f"{error.__class__.__name__}: {error}"
            raise TrackerUnavailable(what, answered=None, reason=reason, tries=_tries(retrying)) from None
        if _retryable(response):
            reason = detail(response)
            raise TrackerUnavailable(
                what, answered=response.status_code, reason=reason, tries=_tries(retrying)
            )
        if response.status_code >= 400:
            raise TrackerError(response.status_code, detail(response))
        return response

    def json(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool | None = None,
        retries: int | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The JSON object the tracker answers to :meth:`request`; :class:`InvalidMessage` if none."""
        response = self.request(method, path, idempotent=idempotent, retries=retries, **options)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise InvalidMessage(
                response.status_code,
                f"the answer to {method} {path} is no JSON object: {response.text[:200]!r}",
            )
        return answer


def detail(response: httpx.Response) -> str:
    """Why the tracker refused: its ``detail``, else the start of the body."""
    try:
        found = response.json().get("detail")
    except (ValueError, AttributeError):  # not JSON, or JSON that is no object
        found = None
    return str(found) if found else response.text[:500]


def _retry_on(*, safe: bool) -> retry_base:
    if safe:
        return retry_if_exception_type(httpx.TransportError) | retry_if_result(_retryable)
    return retry_if_exception_type(NEVER_SENT)


def _retryable(response: httpx.Response) -> bool:
    return response.status_code in RETRYABLE_STATUS


def _tries(retrying: Retrying) -> int:
    """How many times the last call through ``retrying`` sent (or tried to send) its request."""
    return int(retrying.statistics.get("attempt_number", 1))


def _last_outcome(state: RetryCallState) -> Any:
    """Out of tries: the last response, or the last transport error raised again."""
    assert state.outcome is not None
    return state.outcome.result()
