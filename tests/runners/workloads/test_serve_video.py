"""Served video cases: sglang's asynchronous video API (``POST /v1/videos``, poll the job, download
its content), timed per request after the client's warmup, and every way a video request fails.

The request-level tests run :class:`VideoRequest` against ``httpx.MockTransport``; the slow ones
run the whole served workload against the fake ``sglang serve`` speaking that API.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from runners.jobspec import CaseSpec
from runners.parsing import RunStatus
from runners.parsing.served import summarize_served
from runners.workloads.base import WorkloadContext, WorkloadResult
from runners.workloads.serve import request_path, unsupported_task
from runners.workloads.serve_api import (
    DeadlinePassed,
    RequestFailed,
    ServeSettings,
    VideoRequest,
    video_request_body,
)
from runners.workloads.sglang import SglangWorkload
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
FAKE_SGLANG = ROOT / "tests" / "fakes" / "fake_sglang.py"
OOM = "CUDA out of memory. Tried to allocate 20.00 GiB"
CONTENT = "request 1 of 3 failed: video job video-1 completed but GET /v1/videos/video-1/content"
FAST = ServeSettings(ready_timeout_s=10.0, poll_interval_s=0.05, video_poll_interval_s=0.02)


def video_case(requests: int = 3, task: str = "t2v", **params: Any) -> CaseSpec:
    return CaseSpec(
        slug="fake-wan",
        version=1,
        model="Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
        task=task,
        workload="sglang",
        mode="serve",
        num_gpus=1,
        requests=requests,
        timeout_s=60,
        params={
            "prompt": "A cat and a dog baking a cake",
            "width": 1280,
            "height": 720,
            "num-frames": 81,
            "num-inference-steps": 40,
            "guidance-scale": 5.0,
            "seed": 42,
            **params,
        },
        flags={"warmup": True},
    )


# ------------------------------------------------------------------ bodies and routing


def test_a_video_body_takes_the_case_params_under_the_request_models_names() -> None:
    assert video_request_body(video_case()) == {
        "prompt": "A cat and a dog baking a cake",
        "size": "1280x720",
        "num_frames": 81,
        "num_inference_steps": 40,
        "guidance_scale": 5.0,
        "seed": 42,
    }
    extra: dict[str, Any] = {"image-path": "/data/cat.png", "fps": 16}
    image_to_video = video_case(task="i2v", **extra)
    body = video_request_body(image_to_video)
    assert (body["input_reference"], body["fps"]) == ("/data/cat.png", 16)
    assert not {"n", "response_format"} & body.keys()  # image-only fields


def test_video_tasks_are_served_through_the_video_api() -> None:
    settings = ServeSettings()
    for task in ("t2v", "i2v", "ti2v"):
        assert unsupported_task(video_case(task=task)) is None
        assert request_path(video_case(task=task), settings) == "/v1/videos"
    assert request_path(video_case(task="t2i"), settings) == "/v1/images/generations"
    refused = unsupported_task(video_case(task="i2i"))
    assert "task 'i2i' is not supported in serve mode" in str(refused)


# ------------------------------------------------------------------ one request, mocked server

Handler = Callable[[httpx.Request], httpx.Response]


def job_server(
    statuses: list[dict[str, Any]], *, content: bytes = b"mp4", seen: list[str] | None = None
) -> Handler:
    """A video API whose job reports ``statuses`` in turn (the last one for ever)."""
    polls = iter(statuses)
    last: list[dict[str, Any]] = [statuses[-1]]

    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(f"{request.method} {request.url.path}")
        if request.method == "POST":
            return httpx.Response(200, json={"id": "v1", "status": "queued"})
        if request.url.path.endswith("/content"):
            return httpx.Response(200, content=content)
        last[0] = next(polls, last[0])
        return httpx.Response(200, json={"id": "v1", **last[0]})

    return handle


def measure(handler: Handler, *, deadline_s: float = 30.0, **settings: Any) -> float:
    options: dict[str, Any] = {"video_poll_interval_s": 0.01, **settings}
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://fake") as client:
        request = VideoRequest(
            client,
            ServeSettings(**options),
            deadline=time.monotonic() + deadline_s,
            exited=lambda: None,
            cancel=threading.Event(),
        )
        return request.measure({"prompt": "p"})


def test_a_video_request_polls_until_completed_then_downloads_the_content() -> None:
    seen: list[str] = []
    statuses = [{"status": "queued"}, {"status": "in_progress"}, {"status": "completed"}]
    latency_ms = measure(job_server(statuses, seen=seen))
    assert latency_ms > 0
    assert seen == [
        "POST /v1/videos",
        "GET /v1/videos/v1",
        "GET /v1/videos/v1",
        "GET /v1/videos/v1",
        "GET /v1/videos/v1/content",
    ]


def test_a_failed_job_without_an_error_message_still_says_it_failed() -> None:
    with pytest.raises(RequestFailed) as failed:
        measure(job_server([{"status": "failed", "error": None}]))
    assert str(failed.value) == "video job v1 failed: the server gave no error message"


def test_an_unknown_job_status_ends_the_request() -> None:
    with pytest.raises(RequestFailed) as failed:
        measure(job_server([{"status": "deleted"}]))
    assert str(failed.value) == "video job v1 reports an unknown status 'deleted'"


def test_a_create_answer_without_a_job_id_is_a_failure() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"status": "queued"})

    with pytest.raises(RequestFailed, match=r"^POST /v1/videos answered no job id: "):
        measure(handle)


def test_the_request_limit_and_the_jobs_deadline_end_polling_differently() -> None:
    forever = job_server([{"status": "in_progress"}])
    with pytest.raises(RequestFailed) as limit:
        measure(forever, video_timeout_s=0.2)
    assert str(limit.value) == "video job v1 still in_progress after 0.2 s (/v1/videos/v1)"
    with pytest.raises(DeadlinePassed):
        measure(forever, deadline_s=0.2, video_timeout_s=60.0)


# ------------------------------------------------------------------ the fake server, end to end


class Served:
    """The served workload wired to the fake ``sglang serve``."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.echo_path = tmp_path / "echo.json"

    def run(
        self, scenario: str, case: CaseSpec | None = None, *, timeout_s: float = 30.0, **settings: Any
    ) -> WorkloadResult:
        workload = SglangWorkload(
            serve_executable=(sys.executable, str(FAKE_SGLANG), "serve"),
            base_env={
                "PATH": os.environ.get("PATH", ""),
                "FAKE_SGLANG_SCENARIO": scenario,
                "FAKE_SGLANG_ECHO": str(self.echo_path),
                "FAKE_SGLANG_VIDEO_S": "0.2",
            },
            probe=None,
            kill_grace_s=0.5,
            serve=replace(FAST, **settings),
        )
        (self.tmp / "tree").mkdir(exist_ok=True)
        context = WorkloadContext(
            tree=self.tmp / "tree",
            job_dir=self.tmp / "job",
            gpu_ids=(0,),
            candidate_sha="669a9bd3c1e84f0d9a2b7e5f6c3d1a0b9e8f7a6c",
            timeout_s=timeout_s,
        )
        return workload.run(case or video_case(), context)

    @property
    def echo(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.echo_path.read_text(encoding="utf-8"))
        return data

    def stopped(self) -> bool:
        """Whether the fake server and its worker are gone and its port is free."""
        argv = self.echo["argv"]
        port = int(argv[argv.index("--port") + 1])
        with socket.socket() as probe:
            closed = probe.connect_ex(("127.0.0.1", port)) != 0
        return closed and all(not Path(f"/proc/{pid}").exists() or _zombie(pid) for pid in self.echo["pids"])


def _zombie(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return text[text.rfind(")") + 2] in "ZX"


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return Served(tmp_path)


@pytest.mark.slow
def test_a_served_video_case_is_timed_from_post_to_content_after_warmup(served: Served) -> None:
    result = served.run("ok", video_case(requests=3))
    assert result.failure is None, result.failure
    assert len(result.request_latencies_ms) == 3  # the client's warmup request is not among them
    # Each fake job takes 0.2 s before it completes: a latency shorter than that stopped at the POST.
    assert all(latency >= 200.0 for latency in result.request_latencies_ms)
    log = result.log_text
    assert log.count('"POST /v1/videos HTTP/1.1" 200 OK') == 4  # 1 warmup + 3 timed
    assert all(f'"GET /v1/videos/video-{n}/content HTTP/1.1" 200 OK' in log for n in range(4))
    assert result.command.endswith(
        '# then 1 warmup + 3 timed x POST /v1/videos {"prompt": "A cat and a dog baking a cake", '
        '"size": "1280x720", "num_frames": 81, "num_inference_steps": 40, "guidance_scale": 5.0, '
        '"seed": 42}, each polled until completed and its content downloaded'
    )
    assert served.stopped()

    summary = summarize_served(log, result.request_latencies_ms, requested=3)
    assert summary.status is RunStatus.OK
    # Left out: the server's warmup and the client's (263.7 ms/step); timed: 264.7, 265.7, 266.7.
    assert summary.denoise_step_ms == pytest.approx(265.7)
    assert summary.e2e_ms == pytest.approx(statistics.median(result.request_latencies_ms))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "settings", "failure", "timed"),
    [
        ("request_error", {}, f"request 2 of 3 failed: POST /v1/videos refused: HTTP 500: {OOM}", 1),
        ("video_failed", {}, f"request 2 of 3 failed: video job video-2 failed: {OOM}", 1),
        (
            "video_never_completes",
            {"video_timeout_s": 1.0},
            "request 1 of 3 failed: video job video-1 still in_progress after 1 s (/v1/videos/video-1)",
            0,
        ),
        (
            "video_no_content",
            {},
            f"{CONTENT} answered HTTP 404: Generation is still in-progress",
            0,
        ),
        (
            "video_empty_content",
            {},
            f"{CONTENT} returned no content",
            0,
        ),
    ],
)
def test_a_failed_video_request_says_why_and_stops_the_server(
    served: Served, scenario: str, settings: dict[str, Any], failure: str, timed: int
) -> None:
    result = served.run(scenario, **settings)
    assert result.failure == failure
    assert not result.timed_out
    assert len(result.request_latencies_ms) == timed
    assert served.stopped()


@pytest.mark.slow
def test_a_video_job_outliving_the_jobs_timeout_is_a_timeout(served: Served) -> None:
    result = served.run("video_never_completes", timeout_s=6.0)
    assert result.timed_out
    assert result.failure == "timed out after 6 s (waiting for request 1 of 3)"
    assert result.request_latencies_ms == ()
    assert served.stopped()


@pytest.mark.slow
def test_a_server_dying_while_a_video_job_is_polled_is_named(served: Served) -> None:
    result = served.run("video_server_dies")
    assert result.failure == "server exited with code 1 during request 1 of 3"
    assert result.exit_code == 1
    assert "Fatal Python error: Segmentation fault" in result.log_text
    wait_until(served.stopped, 10, "the fake server's worker to be gone")
