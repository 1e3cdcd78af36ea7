"""One timed request to ``sglang serve``'s OpenAI-style API: an image in one answer, a video as a job.

The endpoints are sglang diffusion's own (``multimodal_gen/runtime/entrypoints/openai``).
Images: ``POST /v1/images/generations`` (``image_api.py``) answers with the image, so a request's
latency is the round trip. Videos (``video_api.py``): ``POST /v1/videos`` answers at once with a
job (``id``, ``status`` ``queued``); ``GET /v1/videos/{id}`` is polled until its status is
``completed`` or ``failed`` (``error.message`` then says why), and ``GET /v1/videos/{id}/content``
returns the file. A video request's latency runs from the POST until the content is downloaded;
it includes up to one poll interval the server did not need, which is why the interval is short.

Both bodies take ``prompt``, ``size`` ("WxH") and sglang's extensions (``num_inference_steps``,
``guidance_scale``, ``seed``, ``negative_prompt``; for videos ``num_frames`` and ``fps``) under
the request models' field names: the case's flag names with ``-`` spelled ``_``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx

from runners.jobspec import CaseSpec

IMAGE_TASKS = frozenset({"t2i"})
VIDEO_TASKS = frozenset({"t2v", "i2v", "ti2v"})
# sglang generate's flag for the input image; the video request model calls it input_reference.
_RENAMED = {"image-path": "input_reference"}


class VideoStatus(StrEnum):
    """A video job's ``status`` as ``GET /v1/videos/{id}`` reports it; any other value ends the request."""

    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


_PENDING = frozenset({VideoStatus.QUEUED, VideoStatus.IN_PROGRESS})


@dataclass(frozen=True)
class ServeSettings:
    """Where and how patiently to talk to the server."""

    host: str = "127.0.0.1"
    health_path: str = "/health"
    generate_path: str = "/v1/images/generations"
    ready_timeout_s: float = 1800.0  # model load plus torch.compile warmup of a 20B DiT takes minutes
    poll_interval_s: float = 1.0  # between readiness probes
    warmup_requests: int = 1
    video_path: str = "/v1/videos"
    video_status_path: str = "/v1/videos/{id}"
    video_content_path: str = "/v1/videos/{id}/content"
    video_poll_interval_s: float = 0.25  # bounds how much a video latency overstates the server's time
    video_timeout_s: float = 3600.0  # one video request, POST to content; the job's timeout bounds it too


class RequestFailed(Exception):
    """A request that did not produce its image or video; the message says why."""


class DeadlinePassed(Exception):
    """The job's own time ran out during a request."""


def is_video(case: CaseSpec) -> bool:
    """Whether the case is served through the video API."""
    return case.task in VIDEO_TASKS


def image_request_body(case: CaseSpec) -> dict[str, Any]:
    """The JSON body of one ``POST /v1/images/generations`` for the case's parameters."""
    return _sampling_body(case, {"n": 1, "response_format": "b64_json"})


def video_request_body(case: CaseSpec) -> dict[str, Any]:
    """The JSON body of one ``POST /v1/videos`` for the case's parameters."""
    return _sampling_body(case, {})


def request_body(case: CaseSpec) -> dict[str, Any]:
    """The body of the case's generation request, image or video."""
    return video_request_body(case) if is_video(case) else image_request_body(case)


def request_path(case: CaseSpec, settings: ServeSettings) -> str:
    """The path the case's generation requests are POSTed to."""
    return settings.video_path if is_video(case) else settings.generate_path


def _sampling_body(case: CaseSpec, fixed: Mapping[str, Any]) -> dict[str, Any]:
    """The prompt, then the endpoint's ``fixed`` fields, then the size and the other parameters."""
    params = case.params
    body: dict[str, Any] = {"prompt": str(params.get("prompt", "")), **fixed}
    if "width" in params and "height" in params:
        body["size"] = f"{params['width']}x{params['height']}"
    for name, value in params.items():
        if name not in ("prompt", "width", "height"):
            # flag spelling → the request model's field names
            body[_RENAMED.get(name, name.replace("-", "_"))] = value
    return body


def time_image_request(
    client: httpx.Client, settings: ServeSettings, body: Mapping[str, Any], remaining_s: float
) -> float:
    """Send one image request; its latency in ms, or :class:`RequestFailed`."""
    started = time.perf_counter()
    answer = client.post(settings.generate_path, json=dict(body), timeout=remaining_s)
    latency_ms = (time.perf_counter() - started) * 1000.0
    if answer.status_code != 200:
        raise RequestFailed(f"HTTP {answer.status_code}: {detail(answer)}")
    try:
        payload = answer.json()
    except ValueError as error:
        raise RequestFailed(f"answer is not JSON: {shorten(answer.text, 200)}") from error
    if not isinstance(payload, dict) or payload.get("error"):
        raise RequestFailed(f"server answered an error: {detail(answer)}")
    if not payload.get("data"):
        raise RequestFailed("answer holds no image")
    return round(latency_ms, 3)


class VideoRequest:
    """One video request: create the job, poll it to an end, download its content.

    ``deadline`` is the job's (``time.monotonic()``); ``exited`` says whether the server process
    has exited (its status, else ``None``), checked at every poll so a dead server ends the wait.
    """

    def __init__(
        self,
        client: httpx.Client,
        settings: ServeSettings,
        *,
        deadline: float,
        exited: Callable[[], int | None],
        cancel: threading.Event,
    ) -> None:
        self.client = client
        self.settings = settings
        self.deadline = deadline
        self.exited = exited
        self.cancel = cancel
        self.limit = deadline  # this request's: the job's deadline or video_timeout_s, the earlier

    def measure(self, body: Mapping[str, Any]) -> float:
        """Latency in ms from the POST until the content is downloaded; raises on any failure."""
        started = time.perf_counter()
        self.limit = min(self.deadline, time.monotonic() + self.settings.video_timeout_s)
        job_id = self._create(body)
        self._wait(job_id)
        self._download(job_id)
        return round((time.perf_counter() - started) * 1000.0, 3)

    def _create(self, body: Mapping[str, Any]) -> str:
        path = self.settings.video_path
        answer = self._call("POST", path, f"no answer to POST {path}", json=dict(body))
        if answer.status_code != 200:
            raise RequestFailed(f"POST {path} refused: HTTP {answer.status_code}: {detail(answer)}")
        job_id = _json_object(answer, f"POST {path}").get("id")
        if not job_id:
            raise RequestFailed(f"POST {path} answered no job id: {shorten(answer.text, 200)}")
        return str(job_id)

    def _wait(self, job_id: str) -> None:
        """Poll the job until it completed; raise when it failed or the time ran out."""
        path = self.settings.video_status_path.format(id=job_id)
        status = str(VideoStatus.QUEUED)
        while self.exited() is None and not self.cancel.is_set():
            answer = self._call("GET", path, f"video job {job_id} still {status}")
            if answer.status_code != 200:
                raise RequestFailed(f"GET {path} answered HTTP {answer.status_code}: {detail(answer)}")
            payload = _json_object(answer, f"GET {path}")
            status = str(payload.get("status"))
            if status == VideoStatus.COMPLETED:
                return
            if status == VideoStatus.FAILED:
                raise RequestFailed(f"video job {job_id} failed: {_job_error(payload)}")
            if status not in _PENDING:
                raise RequestFailed(f"video job {job_id} reports an unknown status {status!r}")
            now = time.monotonic()
            if now >= self.limit:
                raise self._out_of_time(f"video job {job_id} still {status}", path)
            self.cancel.wait(min(self.settings.video_poll_interval_s, self.limit - now))
        # The caller reads the exit status (or the cancel) and says so; this only ends the wait.
        raise RequestFailed(f"stopped waiting for video job {job_id} ({status})")

    def _download(self, job_id: str) -> None:
        path = self.settings.video_content_path.format(id=job_id)
        answer = self._call("GET", path, f"content of video job {job_id} not downloaded")
        if answer.status_code != 200:
            raise RequestFailed(
                f"video job {job_id} completed but GET {path} answered HTTP {answer.status_code}: "
                f"{detail(answer)}"
            )
        if not answer.content:
            raise RequestFailed(f"video job {job_id} completed but GET {path} returned no content")

    def _call(self, method: str, path: str, unfinished: str, **options: Any) -> httpx.Response:
        """One HTTP call bounded by the time left; ``unfinished`` says what a timeout left undone."""
        try:
            return self.client.request(
                method, path, timeout=max(self.limit - time.monotonic(), 0.1), **options
            )
        except httpx.TimeoutException:
            raise self._out_of_time(unfinished, path) from None

    def _out_of_time(self, unfinished: str, path: str) -> Exception:
        """The job's time ran out (:class:`DeadlinePassed`), or this request's own limit."""
        if time.monotonic() >= self.deadline:
            return DeadlinePassed()
        return RequestFailed(f"{unfinished} after {self.settings.video_timeout_s:g} s ({path})")


def _json_object(answer: httpx.Response, what: str) -> dict[str, Any]:
    try:
        payload = answer.json()
    except ValueError as error:
        raise RequestFailed(f"{what} answer is not JSON: {shorten(answer.text, 200)}") from error
    if not isinstance(payload, dict):
        raise RequestFailed(f"{what} answer is not a JSON object: {shorten(answer.text, 200)}")
    return payload


def _job_error(payload: Mapping[str, Any]) -> str:
    """A failed job's reason: ``error.message`` as sglang sets it, else whatever ``error`` holds."""
    error = payload.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error
    return shorten(str(error), 300) if error else "the server gave no error message"


def detail(answer: httpx.Response) -> str:
    """The error text of an answer: FastAPI's ``detail``, an OpenAI-style ``error``, else the body."""
    try:
        payload = answer.json()
    except ValueError:
        return shorten(answer.text, 300) or "(empty body)"
    if isinstance(payload, dict):
        for key in ("detail", "error", "message"):
            value = payload.get(key)
            if isinstance(value, dict):
                value = value.get("message", value)
            if value:
                return shorten(str(value), 300)
    return shorten(answer.text, 300)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
