#!/usr/bin/env python3
"""A stand-in for ``sglang`` (``generate`` and ``serve``) that replays recorded output.

Usage: ``fake_sglang.py generate|serve [sglang flags...]``. Behaviour is chosen by environment:

``FAKE_SGLANG_SCENARIO``
    generate: ``ok`` (default), ``crash``, ``hang``, ``no_timing``, ``flood``, ``oom_kill``,
    ``graph_breaks``, ``dynamo_counters``.
    serve: ``ok`` (default), ``exit_early``, ``never_ready``, ``request_error`` (the server's third
    request, image or video, is refused with HTTP 500), ``request_hang``; for videos also
    ``video_failed`` (the third job ends ``failed``), ``video_never_completes`` (every job after the
    client's warmup stays ``in_progress``), ``video_no_content`` / ``video_empty_content`` (after the
    warmup, ``/content`` answers 404 / no bytes), ``video_server_dies`` (the server exits while the
    first job after the warmup is polled).
``FAKE_SGLANG_VIDEO_S``
    how long a video job takes (default 0.2): ``queued`` for its first third, then ``in_progress``.
``FAKE_SGLANG_ECHO``
    a file that receives ``{"argv": [...], "env": {...}}`` (SGLANG_GIT_COMMIT, CUDA_VISIBLE_DEVICES,
    TORCH_LOGS, PYTHONUNBUFFERED, PYTHONPATH) and, while it runs, ``"pids"``: its own pid and its
    worker's, so tests can check that nothing survives.
``FAKE_SGLANG_IGNORE_TERM=1``
    the fake and its worker ignore SIGTERM: only SIGKILL stops them.
``FAKE_SGLANG_FLOOD_LINES``
    how many filler lines ``flood`` prints (default 20000).

Logs and dumps come from ``tests/data/sglang`` (real or sglang-format output); nothing here runs
at import time, so tests may import the log builders.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

DATA = Path(__file__).resolve().parent.parent / "data" / "sglang"
OK_LOG = "qwen_image_669a9bd.log"
OK_OUTPUT_NAME = (  # the file the OK log says it saved
    "A_coffee_shop_entrance_features_a_chalkboard_sign_reading_Qwen_Coffee_2_per_cup_with_a_neon_light_beside"
    "_20260519-091440_f2a74de4.png"
)
OK_DUMP = "perf_dump_qwen_image_669a9bd.json"
ECHOED_ENV = (
    "SGLANG_GIT_COMMIT",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_LOGS",
    "PYTHONUNBUFFERED",
    "PYTHONPATH",
    "TORCHINDUCTOR_CACHE_DIR",
)

# Served requests: the k-th request the server runs (the client's warmup is k = 0) reports an
# average step time of SERVED_BASE_S + k * SERVED_DELTA_S seconds.
SERVED_BASE_S = 0.2637
SERVED_DELTA_S = 0.001
SERVED_WARMUP_STEP_S = 41.2871
STAGES = (
    ("InputValidationStage", 0.0001),
    ("TextEncodingStage", 0.2104),
    ("ConditioningStage", 0.0000),
    ("TimestepPreparationStage", 0.0151),
    ("LatentPreparationStage", 0.0002),
)
PIPELINE = (
    "['input_validation_stage', 'prompt_encoding_stage_primary', 'conditioning_stage', "
    "'timestep_preparation_stage', 'latent_preparation_stage', 'denoising_stage', 'decoding_stage']"
)


def stamp() -> str:
    """sglang's "[MM-DD HH:MM:SS]" record prefix."""
    return time.strftime("[%m-%d %H:%M:%S]")


def say(text: str = "") -> None:
    for line in text.split("\n"):
        print(f"{stamp()} {line}" if line else "", flush=True)


def replay(name: str) -> None:
    """Print a recorded log; its "# " header lines are notes of whoever recorded it, not output."""
    text = (DATA / name).read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.startswith("# "):
            print(line, flush=True)


def echo(argv: list[str], **extra: Any) -> None:
    path = os.environ.get("FAKE_SGLANG_ECHO")
    if not path:
        return
    record = {
        "argv": argv,
        "cwd": os.getcwd(),
        "env": {name: os.environ.get(name) for name in ECHOED_ENV},
        **extra,
    }
    Path(path).write_text(json.dumps(record), encoding="utf-8")


def ignore_term_if_asked() -> None:
    if os.environ.get("FAKE_SGLANG_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def start_worker() -> subprocess.Popen[bytes]:
    """A child like sglang's per-GPU scheduler: same process group, outlives nobody on purpose."""
    code = "import signal, time\n"
    if os.environ.get("FAKE_SGLANG_IGNORE_TERM") == "1":
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "time.sleep(600)\n"
    return subprocess.Popen([sys.executable, "-c", code])


# ------------------------------------------------------------------ torch logs


def torch_record(
    rank: int, pid: int, compile_id: str, artifact: str, lines: list[str], level: str = "V"
) -> str:
    """A multi-line record as torch's TorchLogsFormatter prints it: the prefix on every line."""
    where = {
        "graph_breaks": "torch/_dynamo/symbolic_convert.py:556",
        "recompiles": "torch/_dynamo/guards.py:4760",
    }.get(artifact, "torch/_dynamo/convert_frame.py:1358")
    tag = f" [__{artifact}]" if artifact else ""
    prefix = f"[rank{rank}]:{level}0519 09:12:41.{rank:06d} {pid} {where}] [{compile_id}]{tag}"
    return "\n".join(f"{prefix} {line}" for line in lines)


def compile_events(rank: int, pid: int) -> list[str]:
    """Two graph breaks, a repeat of the first in a later frame, one recompile, one limit hit."""
    norm = "/sgl/python/sglang/multimodal_gen/runtime/layers/layernorm.py:87"
    attn = "/sgl/python/sglang/multimodal_gen/runtime/layers/attention/selector.py:141"
    dit = "/sgl/python/sglang/multimodal_gen/runtime/models/dits/qwen_image.py"
    return [
        torch_record(
            rank,
            pid,
            "0/0",
            "graph_breaks",
            [
                f"Graph break in user code at {norm}",
                "Graph Break Reason: Skip calling `torch.compiler.disable()`d function",
                (
                    "  Explanation: Skip calling function `<function fused_rms_norm at 0x7f3a>` since it was "
                    "wrapped with `torch.compiler.disable` (reason: None)"
                ),
                "  Hint: Remove the `torch.compiler.disable` call",
                "",
                "User code traceback:",
                f'  File "{dit}", line 412, in forward',
                "    hidden_states = self.norm1(hidden_states)",
            ],
        ),
        torch_record(
            rank,
            pid,
            "1/0",
            "graph_breaks",
            [
                f"Graph break in user code at {attn}",
                "Graph Break Reason: Unsupported Tensor.item() call with capture_scalar_outputs=False",
            ],
        ),
        torch_record(
            rank,
            pid,
            "2/0",
            "graph_breaks",
            [
                f"Graph break (user stack suppressed due to duplicate graph break) in user code at {norm}",
                "Graph Break Reason: Skip calling `torch.compiler.disable()`d function",
            ],
        ),
        torch_record(
            rank,
            pid,
            "0/1",
            "recompiles",
            [
                f"Recompiling function forward in {dit}:380",
                "    triggered by the following guard failure(s):",
                "    - 0/0: tensor 'L['hidden_states']' size mismatch at index 1. expected 4096, actual 1024",
            ],
        ),
        torch_record(
            rank,
            pid,
            "3/8",
            "",
            [
                "torch._dynamo hit config.recompile_limit (8)",
                f"   function: 'forward' ({dit}:380)",
                "   last reason: 3/7: L['timestep'] == 981.0",
            ],
            level="W",
        ),
    ]


# ------------------------------------------------------------------ generate


def generate(argv: list[str], scenario: str) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--perf-dump-path")
    parser.add_argument("--save-output", action="store_true")
    parser.add_argument("--output-path", default="outputs")
    args, _ = parser.parse_known_args(argv)
    echo(argv)
    dump_path = Path(args.perf_dump_path) if args.perf_dump_path else None
    if scenario == "crash":
        replay("error_during_execution.log")
        return 1
    if scenario == "no_timing":
        replay("no_timing.log")
        return 0
    if scenario == "oom_kill":
        say("Scheduler bind at endpoint: tcp://127.0.0.1:5599\nLoading required modules: ['transformer']")
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario == "hang":
        ignore_term_if_asked()
        worker = start_worker()
        echo(argv, pids=[os.getpid(), worker.pid])
        say("Scheduler bind at endpoint: tcp://127.0.0.1:5431\n[DenoisingStage] started...")
        time.sleep(600)
        return 0
    if scenario == "flood":
        filler = "x" * 60
        for number in range(int(os.environ.get("FAKE_SGLANG_FLOOD_LINES", "20000"))):
            print(f"flood line {number}: {filler}")
        sys.stdout.flush()
    if scenario == "graph_breaks":
        for rank in (0, 1):
            for record in compile_events(rank, 4000 + rank):
                print(record, file=sys.stderr, flush=True)
    replay(OK_LOG)
    if args.save_output:  # the picture the replayed log says it saved, 64² (the log's is 1024²)
        from PIL import Image

        Path(args.output_path).mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (200, 80, 20)).save(Path(args.output_path) / OK_OUTPUT_NAME)
    if dump_path is not None:
        dump = json.loads((DATA / OK_DUMP).read_text(encoding="utf-8"))
        dump["commit_hash"] = os.environ.get("SGLANG_GIT_COMMIT", dump.get("commit_hash"))
        if scenario == "dynamo_counters":
            dump["dynamo_counters"] = {
                "graph_breaks": 7,
                "unique_graphs": 9,
                "frames_compiled": 5,
                "recompiles": 2,
            }
        dump_path.write_text(json.dumps(dump, indent=2), encoding="utf-8")
    return 0


# ------------------------------------------------------------------ serve


def request_log(average_s: float, steps: int, *, warmup: bool = False) -> str:
    """What sglang's scheduler prints for one request (stage profiler lines, tqdm, memory)."""
    lines = [f"Running pipeline stages: {PIPELINE}"]
    for name, seconds in STAGES:
        lines += [f"[{name}] started...", f"[{name}] finished in {seconds:.4f} seconds"]
    lines += [
        "[DenoisingStage] started...",
        f"  0%|          | 0/{steps} [00:00<?, ?it/s]",
        f"100%|██████████| {steps}/{steps} [00:13<00:00, {1 / average_s:.2f}it/s]",
        f"[DenoisingStage] average time per step: {average_s:.4f} seconds",
        f"[DenoisingStage] finished in {average_s * steps:.4f} seconds",
        "[DecodingStage] started...",
        "[DecodingStage] finished in 0.0179 seconds",
        (
            "Peak GPU memory: 46.51 GB, Peak allocated: 44.38 GB, Memory pool overhead: 2.13 GB (4.6%), "
            "Remaining GPU memory at peak: 93.29 GB."
        ),
    ]
    if warmup:
        lines = ["Processing warmup req...", *lines, f"Warmup req processed in {average_s + 4.4:.2f} seconds"]
    return "\n".join(lines)


def served_log(averages: list[float], steps: int = 50) -> str:
    """A whole served log: startup, the server's 1-step warmup, then one block per request."""
    blocks = [
        "Starting server...",
        request_log(SERVED_WARMUP_STEP_S, 1, warmup=True),
        "The server is fired up and ready to roll!",
    ]
    blocks += [request_log(average, steps) for average in averages]
    return "\n".join(
        f"[05-19 10:05:04] {line}" if line and not line[0].isspace() else line
        for block in blocks
        for line in block.split("\n")
    )


OOM = "CUDA out of memory. Tried to allocate 20.00 GiB"


def video_status(job: dict[str, Any], scenario: str) -> str:
    """A job's status now: queued, in_progress, then completed or failed once its time is up."""
    elapsed = time.monotonic() - job["created"]
    if elapsed < job["takes_s"] / 3:
        return "queued"
    if elapsed < job["takes_s"] or (scenario == "video_never_completes" and job["number"] >= 1):
        return "in_progress"
    return "failed" if scenario == "video_failed" and job["number"] == 2 else "completed"


class _Handler(BaseHTTPRequestHandler):
    scenario = "ok"
    served = 0
    lock = threading.Lock()
    jobs: ClassVar[dict[str, dict[str, Any]]] = {}

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # uvicorn's access line shape, so the server log looks like sglang's
        status = HTTPStatus(int(code)) if str(code).isdigit() else None
        where = f"{self.client_address[0]}:{self.client_address[1]}"
        phrase = f"{status.value} {status.phrase}" if status else str(code)
        print(f'INFO:     {where} - "{self.requestline}" {phrase}', flush=True)

    def log_message(self, format: str, *args: Any) -> None:
        print(f"ERROR:    {format % args}", flush=True)

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        self._answer_bytes(status, json.dumps(body).encode(), "application/json")

    def _answer_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        if self.path == "/health":
            if self.scenario == "never_ready":
                self._answer(503, {"detail": "loading"})
            else:
                self._answer(200, {"status": "ok"})
        elif parts[:2] == ["v1", "videos"] and len(parts) in (3, 4) and parts[2] in self.jobs:
            job = self.jobs[parts[2]]
            if len(parts) == 3:
                self._video_job(job)
            else:
                self._video_content(job)
        elif parts[:2] == ["v1", "videos"]:
            self._answer(404, {"detail": "Video not found"})
        else:
            self._answer(404, {"detail": "Not Found"})

    def _video_job(self, job: dict[str, Any]) -> None:
        status = video_status(job, self.scenario)
        if self.scenario == "video_server_dies" and job["number"] >= 1 and status == "in_progress":
            print("Fatal Python error: Segmentation fault", flush=True)
            os._exit(1)
        answer = {"id": job["id"], "object": "video", "status": status, "size": job["size"], "error": None}
        if status == "failed":
            answer["error"] = {"message": OOM}
        self._answer(200, answer)

    def _video_content(self, job: dict[str, Any]) -> None:
        if video_status(job, self.scenario) != "completed" or (
            self.scenario == "video_no_content" and job["number"] >= 1
        ):
            self._answer(404, {"detail": "Generation is still in-progress"})  # sglang: no file yet
        elif self.scenario == "video_empty_content" and job["number"] >= 1:
            self._answer_bytes(200, b"", "video/mp4")
        else:
            self._answer_bytes(200, b"\x00\x00\x00\x18ftypmp42 fake video", "video/mp4")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path not in ("/v1/images/generations", "/v1/videos"):
            self._answer(404, {"detail": "Not Found"})
            return
        with _Handler.lock:
            number = _Handler.served
            _Handler.served += 1
        if self.scenario == "request_hang" and number >= 1:
            time.sleep(600)
        if self.scenario == "request_error" and number == 2:
            say(
                f"[DenoisingStage] started...\n[DenoisingStage] Error during execution after 812.4410 ms: {OOM}"
            )
            self._answer(500, {"detail": OOM})
            return
        steps = int(body.get("num_inference_steps") or 50)
        if self.path == "/v1/videos":
            self._create_video(number, body, steps)
            return
        say(request_log(SERVED_BASE_S + number * SERVED_DELTA_S, steps))
        time.sleep(0.02)
        image = base64.b64encode(b"\x89PNG fake").decode()
        self._answer(200, {"id": f"req-{number}", "created": int(time.time()), "data": [{"b64_json": image}]})

    def _create_video(self, number: int, body: dict[str, Any], steps: int) -> None:
        """Answer at once with a queued job, as sglang's create_video does; the job "runs" meanwhile."""
        job: dict[str, Any] = {
            "id": f"video-{number}",
            "number": number,
            "created": time.monotonic(),
            "takes_s": float(os.environ.get("FAKE_SGLANG_VIDEO_S", "0.2")),
            "size": str(body.get("size", "")),
        }
        _Handler.jobs[job["id"]] = job
        if self.scenario == "video_failed" and number == 2:
            say(
                f"[DenoisingStage] started...\n[DenoisingStage] Error during execution after 812.4410 ms: {OOM}"
            )
        elif self.scenario in ("video_never_completes", "video_server_dies") and number >= 1:
            say("[DenoisingStage] started...")
        else:
            say(request_log(SERVED_BASE_S + number * SERVED_DELTA_S, steps))
        self._answer(200, {"id": job["id"], "object": "video", "status": "queued", "size": job["size"]})


def serve(argv: list[str], scenario: str) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--port", type=int, default=30000)
    args, _ = parser.parse_known_args(argv)
    ignore_term_if_asked()
    worker = start_worker()
    echo(argv, pids=[os.getpid(), worker.pid])
    say("Starting server...\nScheduler bind at endpoint: tcp://127.0.0.1:5431")
    if scenario == "exit_early":
        print("RuntimeError: Initialization failed. Please see the error messages above.", flush=True)
        worker.kill()
        return 1
    say(request_log(SERVED_WARMUP_STEP_S, 1, warmup=True))
    _Handler.scenario = scenario
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    say("Starting FastAPI server.")
    if scenario != "never_ready":
        say("The server is fired up and ready to roll!")
    server.serve_forever()
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("generate", "serve"):
        print("usage: fake_sglang.py generate|serve [flags]", file=sys.stderr)
        return 2
    scenario = os.environ.get("FAKE_SGLANG_SCENARIO", "ok")
    return generate(argv[1:], scenario) if argv[0] == "generate" else serve(argv[1:], scenario)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
