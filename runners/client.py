"""HTTP client of the tracker for runner agents (httpx), with retries and backoff.

Connection errors, timeouts, 429 and 5xx answers are retried with exponential backoff; a 409
means the attempt lost its lease (:class:`LeaseLost`); any other 4xx is a :class:`TrackerError`
carrying the tracker's message, never retried. Bodies are built from, and claims read as, the
classes of :mod:`wire`; one that does not fit them is an :class:`InvalidMessage`, never sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
)

from runners.jobspec import JobSpec
from wire import AttemptIn, BatchOut, RunnerIn, validation_message

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class TrackerError(Exception):
    """The tracker refused a request; ``status`` is the HTTP status (0: never reached)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail


class LeaseLost(TrackerError):
    """409: the attempt's lease expired or the job moved on; its result will never be accepted."""


class TrackerUnavailable(TrackerError):
    """The tracker could not be reached (or kept failing) after every retry."""


class InvalidMessage(TrackerError):
    """A body this runner would send, or a claim answer it got, does not fit the wire format.

    ``status`` is 0 for a body refused before sending (the tracker would answer 422 with the same
    message), else the status of the answer that could not be read.
    """


class TrackerClient:
    """The runner endpoints of ``/api/v1``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/api/v1",
            headers={"Authorization": f"Bearer {token}", "User-Agent": "perftrack-runner"},
            timeout=timeout_s,
            transport=transport,
        )
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._sleep = sleep

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def register(
        self, *, name: str, hardware: str, gpu_count: int, labels: dict[str, str], version: str, host: str
    ) -> dict[str, Any]:
        """Register this runner (or update what it advertises)."""
        body = _body(
            RunnerIn,
            name=name,
            hardware=hardware,
            gpu_count=gpu_count,
            labels=labels,
            version=version,
            host=host,
        )
        return self._json(self._request("POST", "/runners", json=body))

    def claim(self, runner: str, *, wait_s: float = 0.0) -> JobSpec | None:
        """Lease the next job, or ``None`` when the queue has nothing for this runner.

        ``wait_s``: let the tracker hold the claim up to this long until a job is queued (long-poll).
        """
        options: dict[str, Any] = {}
        if wait_s > 0:
            options["params"] = {"wait": f"{wait_s:g}"}
            timeout = self._http.timeout
            options["timeout"] = httpx.Timeout(
                connect=timeout.connect,
                read=(timeout.read or 0.0) + wait_s,
                write=timeout.write,
                pool=timeout.pool,
            )
        response = self._request("POST", f"/runners/{runner}/claim", **options)
        if response.status_code == 204:
            return None
        try:
            return JobSpec.from_json(response.json())
        except ValueError as error:  # not JSON, or (a ValidationError) JSON that is no job spec
            problem = validation_message(error) if isinstance(error, ValidationError) else str(error)
            raise InvalidMessage(
                response.status_code, f"the claim answer is no job spec: {problem}"
            ) from error

    def heartbeat(self, *, runner: str, job_id: int, attempt: int) -> None:
        """Extend the lease; :class:`LeaseLost` when it is gone.

        Tried once: the next beat is the retry. Backing off here would hold the agent, which waits
        for the heartbeat thread before it uploads, for as long as the tracker is down.
        """
        self._request(
            "POST",
            f"/jobs/{job_id}/heartbeat",
            params={"runner": runner},
            json=_body(AttemptIn, attempt=attempt),
            retries=0,
        )

    def upload(self, *, runner: str, job_id: int, payload: dict[str, Any]) -> dict[str, Any]:
        """Upload one attempt's result; a repeat answers with the stored run."""
        return self._json(
            self._request("POST", f"/jobs/{job_id}/result", params={"runner": runner}, json=payload)
        )

    def upload_batch(self, *, runner: str, uploads: Sequence[tuple[int, dict[str, Any]]]) -> BatchOut:
        """Upload several attempts' results (``(job_id, payload)``) in one request; the tracker's
        answer for each, in the order sent (a refused one says why, a repeat is a duplicate)."""
        body = {"results": [{"job_id": job_id, "result": payload} for job_id, payload in uploads]}
        response = self._request("POST", "/jobs/results", params={"runner": runner}, json=body)
        try:
            answer = BatchOut.model_validate(response.json())
        except ValueError as error:  # not JSON, or (a ValidationError) JSON that is no batch answer
            problem = validation_message(error) if isinstance(error, ValidationError) else str(error)
            raise InvalidMessage(
                response.status_code, f"the batch answer is no batch outcome: {problem}"
            ) from error
        if [line.index for line in answer.items] != list(range(len(uploads))):
            raise InvalidMessage(response.status_code, "the batch answer does not list every upload in order")
        return answer

    def release(self, *, runner: str, job_id: int, attempt: int, reason: str) -> None:
        """Hand the job back to the queue."""
        self._request(
            "POST",
            f"/jobs/{job_id}/release",
            params={"runner": runner},
            json=_body(AttemptIn, attempt=attempt, reason=reason),
        )

    def _request(
        self, method: str, path: str, *, retries: int | None = None, **kwargs: Any
    ) -> httpx.Response:
        tries = (self._retries if retries is None else retries) + 1
        retrying = Retrying(
            stop=stop_after_attempt(tries),
            wait=wait_exponential(multiplier=self._backoff_s, max=self._max_backoff_s),
            retry=retry_if_exception_type(httpx.TransportError) | retry_if_result(_retryable),
            sleep=self._sleep,
            retry_error_callback=_last_outcome,
        )
        try:
            response: httpx.Response = retrying(self._http.request, method, path, **kwargs)
        except httpx.TransportError as error:
            problem = f"cannot reach the tracker: {error.__class__.__name__}: {error}"
            raise TrackerUnavailable(0, f"{method} {path}: {problem} (after {tries} tries)") from None
        if _retryable(response):
            problem = f"tracker answered {response.status_code}: {_detail(response)}"
            raise TrackerUnavailable(0, f"{method} {path}: {problem} (after {tries} tries)")
        if response.status_code == 409:
            raise LeaseLost(409, _detail(response))
        if response.status_code >= 400:
            raise TrackerError(response.status_code, _detail(response))
        return response

    @staticmethod
    def _json(response: httpx.Response) -> dict[str, Any]:
        data: dict[str, Any] = response.json()
        return data


def _retryable(response: httpx.Response) -> bool:
    return response.status_code in RETRYABLE_STATUS


def _last_outcome(state: RetryCallState) -> Any:
    """Out of tries: the last response, or the last transport error raised again."""
    assert state.outcome is not None
    return state.outcome.result()


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    return str(detail) if detail else response.text[:500]


def _body(shape: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """``fields`` as ``shape`` validates and dumps them; :class:`InvalidMessage` if they do not fit."""
    try:
        return shape(**fields).model_dump(mode="json", exclude_none=True)
    except ValidationError as error:
        raise InvalidMessage(0, validation_message(error)) from error
