"""The runner endpoints of the tracker's API, for runner agents, on the one client of :mod:`runners.http`.

Connection errors, timeouts, 429 and 5xx answers are retried with exponential backoff where the
endpoint takes a repeat (registering, uploading, releasing); a claim is sent again only when it
never left (the agent's next poll is its retry) and a heartbeat is tried once. A 409 means the
attempt lost its lease (:class:`LeaseLost`); any other 4xx is a :class:`TrackerError` carrying the
tracker's message, never retried. Bodies are built from, and claims read as, the classes of
:mod:`wire`; one that does not fit them is an :class:`InvalidMessage`, never sent.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from runners.http import (
    InvalidMessage,
    RetryPolicy,
    TrackerError,
    TrackerHttp,
    TrackerUnavailable,
)
from runners.jobspec import JobSpec
from wire import AttemptIn, BatchOut, RunnerIn, validation_message

__all__ = ["InvalidMessage", "LeaseLost", "TrackerClient", "TrackerError", "TrackerUnavailable"]


class LeaseLost(TrackerError):
    """409: the attempt's lease expired or the job moved on; its result will never be accepted."""


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
        self._tracker = TrackerHttp.connect(
            base_url,
            token,
            timeout_s=timeout_s,
            user_agent="perftrack-runner",
            retry=RetryPolicy(retries=retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s),
            transport=transport,
            sleep=sleep,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._tracker.close()

    def register(
        self, *, name: str, hardware: str, gpu_count: int, labels: dict[str, str], version: str, host: str
    ) -> dict[str, Any]:
        """Register this runner (or update what it advertises); a repeat updates the same runner."""
        body = _body(
            RunnerIn,
            name=name,
            hardware=hardware,
            gpu_count=gpu_count,
            labels=labels,
            version=version,
            host=host,
        )
        return self._json("POST", "/runners", idempotent=True, json=body)

    def claim(self, runner: str, *, wait_s: float = 0.0) -> JobSpec | None:
        """Lease the next job, or ``None`` when the queue has nothing for this runner.

        ``wait_s``: let the tracker hold the claim up to this long until a job is queued (long-poll).
        Sent again only when it never reached the tracker: a claim whose answer was lost leased a
        job, and a repeat would lease another (the lost one waits for its lease to expire).
        """
        options: dict[str, Any] = {}
        if wait_s > 0:
            options["params"] = {"wait": f"{wait_s:g}"}
            timeout = self._tracker.timeout
            options["timeout"] = httpx.Timeout(
                connect=timeout.connect,
                read=(timeout.read or 0.0) + wait_s,
                write=timeout.write,
                pool=timeout.pool,
            )
        response = self._request("POST", f"/runners/{runner}/claim", idempotent=False, **options)
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
            "POST", f"/jobs/{job_id}/result", idempotent=True, params={"runner": runner}, json=payload
        )

    def upload_batch(self, *, runner: str, uploads: Sequence[tuple[int, dict[str, Any]]]) -> BatchOut:
        """Upload several attempts' results (``(job_id, payload)``) in one request; the tracker's
        answer for each, in the order sent (a refused one says why, a repeat is a duplicate)."""
        body = {"results": [{"job_id": job_id, "result": payload} for job_id, payload in uploads]}
        response = self._request(
            "POST", "/jobs/results", idempotent=True, params={"runner": runner}, json=body
        )
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
        """Hand the job back to the queue.

        Retried: a repeat after a lost answer changes nothing (the tracker refuses it with 409, the
        attempt no longer being leased), and an agent that stops must not hold its job.
        """
        self._request(
            "POST",
            f"/jobs/{job_id}/release",
            idempotent=True,
            params={"runner": runner},
            json=_body(AttemptIn, attempt=attempt, reason=reason),
        )

    def _request(self, method: str, path: str, **options: Any) -> httpx.Response:
        with _lease_lost_on_409():
            return self._tracker.request(method, path, **options)

    def _json(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        with _lease_lost_on_409():
            return self._tracker.json(method, path, **options)


@contextlib.contextmanager
def _lease_lost_on_409() -> Iterator[None]:
    """A 409 from a runner endpoint means the attempt's lease is gone: :class:`LeaseLost`."""
    try:
        yield
    except TrackerError as error:
        if error.status == 409:
            raise LeaseLost(409, error.detail) from None
        raise


def _body(shape: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """``fields`` as ``shape`` validates and dumps them; :class:`InvalidMessage` if they do not fit."""
    try:
        return shape(**fields).model_dump(mode="json", exclude_none=True)
    except ValidationError as error:
        raise InvalidMessage(0, validation_message(error)) from error
