"""Serve mode: start ``sglang serve``, wait until it answers, time N requests, always stop it.

Maintainers report served cases as "median of N requests after warmup, each arm on a fresh
server". Readiness is sglang diffusion's ``GET /health`` (``http_server.py``'s health router: 503
until the workers are up and, since 0.5.18, until the server's own warmup request has run; 503
"unhealthy" with an error once a worker died, which ends the wait at once); what one image or video
request is, and how it is timed, is :mod:`runners.workloads.serve_api`'s.

Before the measured requests the client sends its own warmup request(s) with the same body: the
server's startup warmup may run another resolution, and with torch.compile on the first request
at a new shape recompiles.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from runners.jobspec import CaseSpec
from runners.workloads.process import CANCELLED, LogCapture, ManagedProcess, describe_exit, start_failure
from runners.workloads.serve_api import (
    IMAGE_TASKS,
    VIDEO_TASKS,
    DeadlinePassed,
    RequestFailed,
    ServeSettings,
    VideoRequest,
    is_video,
    request_body,
    request_path,
    time_image_request,
)

__all__ = [
    "ServeSettings",
    "ServedOutcome",
    "free_port",
    "is_video",
    "request_body",
    "request_path",
    "run_served",
    "unsupported_task",
]


@dataclass(frozen=True)
class ServedOutcome:
    """What a served run produced besides its log.

    ``exit_code`` is set only when the server exited on its own; one the runner stopped has none.
    """

    latencies_ms: tuple[float, ...] = ()
    failure: str | None = None
    timed_out: bool = False
    exit_code: int | None = None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the server binds it a moment later; a race is unlikely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def unsupported_task(case: CaseSpec) -> str | None:
    """Why the case cannot be served, or ``None``."""
    if case.task in IMAGE_TASKS or case.task in VIDEO_TASKS:
        return None
    served = ", ".join(sorted(IMAGE_TASKS | VIDEO_TASKS))
    return (
        f"serve mode sends image and video generation requests ({served}); "
        f"task {case.task!r} is not supported in serve mode yet"
    )


def run_served(
    case: CaseSpec,
    *,
    argv: Sequence[str],
    port: int,
    env: Mapping[str, str],
    cwd: Path | None,
    capture: LogCapture,
    settings: ServeSettings,
    timeout_s: float,
    grace_s: float,
    cancel: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
) -> ServedOutcome:
    """Start the server, time ``case.requests`` requests after the warmup ones, stop the server."""
    deadline = time.monotonic() + timeout_s
    try:
        server = ManagedProcess.start(argv, env=env, cwd=cwd, capture=capture, on_start=on_start)
    except OSError as error:
        return ServedOutcome(failure=start_failure(argv, error))
    cancel = cancel or threading.Event()
    finished = threading.Event()
    # A request can take minutes; stopping the server is what interrupts it when a cancel comes.
    watcher = threading.Thread(target=_stop_on_cancel, args=(cancel, finished, server, grace_s), daemon=True)
    watcher.start()
    try:
        # trust_env=False: a proxy from the environment must not intercept requests to localhost.
        with httpx.Client(base_url=f"http://{settings.host}:{port}", trust_env=False) as client:
            outcome = _Session(case, server, client, settings, deadline, timeout_s, cancel).run()
    finally:
        finished.set()
        watcher.join()
        exited_alone = None if cancel.is_set() else server.poll()
        server.stop(grace_s)
    if cancel.is_set():
        return ServedOutcome(outcome.latencies_ms, CANCELLED)
    if exited_alone is not None and outcome.exit_code is None:
        outcome = ServedOutcome(outcome.latencies_ms, outcome.failure, outcome.timed_out, exited_alone)
    return outcome


def _unhealthy(answer: httpx.Response) -> str | None:
    """The error of a health answer that says the server is broken, not merely warming up.

    sglang 0.5.23 answers 503 with no body until its warmup ends, and 503 with
    ``{"status": "unhealthy", "error": ...}`` once a scheduler worker or its broker has died
    (``entrypoints/http_server.py``): waiting longer cannot help then.
    """
    if answer.status_code != 503 or not answer.content:
        return None
    try:
        body = answer.json()
    except ValueError:
        return None
    if isinstance(body, dict) and body.get("status") == "unhealthy":
        return str(body.get("error") or "no reason given")
    return None


def _stop_on_cancel(
    cancel: threading.Event, finished: threading.Event, server: ManagedProcess, grace_s: float
) -> None:
    while not finished.is_set():
        if cancel.wait(0.2):
            server.stop(grace_s)
            return


class _Session:
    """One server's life as the client sees it: readiness, warmup requests, measured requests."""

    def __init__(
        self,
        case: CaseSpec,
        server: ManagedProcess,
        client: httpx.Client,
        settings: ServeSettings,
        deadline: float,
        timeout_s: float,
        cancel: threading.Event,
    ) -> None:
        self.case = case
        self.server = server
        self.client = client
        self.settings = settings
        self.deadline = deadline
        self.timeout_s = timeout_s
        self.cancel = cancel

    def run(self) -> ServedOutcome:
        not_ready = self._wait_ready()
        if not_ready is not None:
            return not_ready
        body = request_body(self.case)
        latencies: list[float] = []
        warmups = max(self.settings.warmup_requests, 0)
        for index in range(warmups + self.case.requests):
            label = (
                f"warmup request {index + 1} of {warmups}"
                if index < warmups
                else f"request {index - warmups + 1} of {self.case.requests}"
            )
            remaining = self.deadline - time.monotonic()
            if self.cancel.is_set():
                return ServedOutcome(tuple(latencies), CANCELLED)
            if remaining <= 0:
                return self._timed_out(latencies, f"before {label}")
            try:
                latency_ms = self._request(body, remaining)
            except (httpx.TimeoutException, DeadlinePassed):
                return self._timed_out(latencies, f"waiting for {label}")
            except (RequestFailed, httpx.HTTPError) as error:
                code = self.server.wait(0.5)  # a refused connection often means the server died
                if code is not None:
                    reason = f"server {describe_exit(code) or 'exited with code 0'} during {label}"
                    return ServedOutcome(tuple(latencies), reason, exit_code=code)
                return ServedOutcome(tuple(latencies), f"{label} failed: {error}")
            if index >= warmups:
                latencies.append(latency_ms)
        return ServedOutcome(tuple(latencies))

    def _wait_ready(self) -> ServedOutcome | None:
        """Poll the health endpoint; an outcome when the server died or never answered."""
        start = time.monotonic()
        ready_deadline = min(self.deadline, start + self.settings.ready_timeout_s)
        url = self.settings.health_path
        while not self.cancel.is_set():
            code = self.server.poll()
            if code is not None:
                reason = describe_exit(code) or "exited with code 0"
                return ServedOutcome(failure=f"server {reason} before it was ready", exit_code=code)
            try:
                answer = self.client.get(url, timeout=min(5.0, max(ready_deadline - time.monotonic(), 0.1)))
                if answer.status_code == 200:
                    return None
                unhealthy = _unhealthy(answer)
                if unhealthy is not None:
                    return ServedOutcome(failure=f"server unhealthy before it was ready: {unhealthy}")
            except httpx.HTTPError:
                pass  # not listening yet
            now = time.monotonic()
            if now >= ready_deadline:
                waited = now - start
                if ready_deadline >= self.deadline:
                    return self._timed_out([], f"waiting for the server to be ready (GET {url})")
                return ServedOutcome(
                    failure=f"server not ready after {waited:.0f} s (GET {url} never answered 200)"
                )
            self.cancel.wait(min(self.settings.poll_interval_s, max(ready_deadline - now, 0.0)))
        return ServedOutcome(failure=CANCELLED)

    def _request(self, body: Mapping[str, Any], remaining_s: float) -> float:
        """Send one generation request; its latency in ms, or :class:`RequestFailed`."""
        if is_video(self.case):
            video = VideoRequest(
                self.client,
                self.settings,
                deadline=self.deadline,
                exited=self.server.poll,
                cancel=self.cancel,
            )
            return video.measure(body)
        return time_image_request(self.client, self.settings, body, remaining_s)

    def _timed_out(self, latencies: list[float], where: str) -> ServedOutcome:
        return ServedOutcome(
            tuple(latencies), f"timed out after {self.timeout_s:g} s ({where})", timed_out=True
        )
