#!/usr/bin/env python3
"""A stand-in for ``sglang`` (``generate`` and ``serve``), as strict as the published release it plays.

Usage: ``fake_sglang.py generate|serve [sglang flags...]``. The argv is parsed with the option table
recorded from the real package (:mod:`tests.fakes.sglang_cli`): an unknown option exits 1, an
ambiguous or badly valued one exits 2, ``--help`` prints argparse's help, exactly as that release
does. Behaviour is chosen by environment:

``FAKE_SGLANG_ERA``
    ``current`` (default): sglang 0.5.23's options (``--warmup-mode``) and wording, colour codes
    included (:mod:`tests.fakes.sglang_logs`); only ``--warmup-mode request`` warms ``generate``
    up, and serve's ``/health`` answers 503 until its server warmup ends. ``legacy``: 0.5.10's
    options (``--warmup``) and the older wording (recorded logs in ``tests/data/sglang``).
``FAKE_SGLANG_OPTIONS``
    another recorded option table (a path) to parse with.
``FAKE_SGLANG_SCENARIO``
    generate: ``ok`` (default), ``crash``, ``hang``, ``no_timing``, ``flood``, ``oom_kill``,
    ``graph_breaks``, ``dynamo_counters``.
    serve: ``ok`` (default), ``exit_early``, ``never_ready``, ``backend_dead`` (``/health`` answers
    503 with sglang's "unhealthy" body), ``request_error`` (the server's third request, image or
    video, is refused with HTTP 500), ``request_hang``; for videos also ``video_failed`` (the third
    job ends ``failed``), ``video_never_completes`` (every job after the client's warmup stays
    ``in_progress``), ``video_no_content`` / ``video_empty_content`` (after the warmup,
    ``/content`` answers 404 / no bytes), ``video_server_dies`` (the server exits while the first
    job after the warmup is polled).
``FAKE_SGLANG_STEP_SCALE``
    generate: a factor on every denoising step time the run reports (default 1; a planted change).
``FAKE_SGLANG_SERVER_WARMUP_S``
    how long serve's own warmup keeps ``/health`` at 503 (current era, default 0.3).
``FAKE_SGLANG_VIDEO_S``
    how long a video job takes (default 0.2): ``queued`` for its first third, then ``in_progress``.
``FAKE_SGLANG_ECHO``
    a file that receives ``{"argv": [...], "env": {...}}`` (SGLANG_GIT_COMMIT, CUDA_VISIBLE_DEVICES,
    TORCH_LOGS, PYTHONUNBUFFERED, PYTHONPATH, ...) and, while it runs, ``"pids"``: its own pid and
    its worker's, so tests can check that nothing survives. ``--help`` runs leave it alone.
``FAKE_SGLANG_IGNORE_TERM=1``
    the fake and its worker ignore SIGTERM: only SIGKILL stops them.
``FAKE_SGLANG_FLOOD_LINES``
    how many filler lines ``flood`` prints (default 20000).

Nothing here runs at import time, so tests may import the log builders.
"""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):  # run as a script: make the fake's sibling modules importable
    sys.path.insert(0, str(ROOT))

from tests.fakes import sglang_cli, sglang_logs  # noqa: E402

DATA = ROOT / "tests" / "data" / "sglang"
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
    "SGLANG_DIFFUSION_SYNC_STAGE_PROFILING",
)

# Served requests: the k-th request the server runs (the client's warmup is k = 0) reports an
# average step time of SERVED_BASE_S + k * SERVED_DELTA_S seconds.
SERVED_BASE_S = 0.2637
SERVED_DELTA_S = 0.001
SERVED_WARMUP_STEP_S = 41.2871
SERVED_PEAK_MB = 47626.24
STAGES = sglang_logs.STAGES  # the same stage times in both eras
PIPELINE = (
    "['input_validation_stage', 'prompt_encoding_stage_primary', 'conditioning_stage', "
    "'timestep_preparation_stage', 'latent_preparation_stage', 'denoising_stage', 'decoding_stage']"
)


stamp = sglang_logs.stamp


def say(text: str = "") -> None:
    for line in text.split("\n"):
        print(f"{stamp()} {line}" if line else "", flush=True)


def replay(name: str, *, warmed_up: bool = True) -> None:
    """Print a recorded log; its "# " header lines are notes of whoever recorded it, not output.

    ``warmed_up=False`` leaves out the recorded warmup request (from "Processing warmup req" to
    "Warmup req processed") and the summary's warmed-up line: 0.5.10 without ``--warmup``.
    """
    text = (DATA / name).read_text(encoding="utf-8")
    in_warmup = False
    for line in text.splitlines():
        if line.startswith("# "):
            continue
        if not warmed_up:
            if "Processing warmup req" in line:
                in_warmup = True
            if in_warmup or "Warmed-up request processed" in line:
                in_warmup = in_warmup and "Warmup req processed in" not in line
                continue
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
    parsed = sglang_cli.parse_or_exit("generate", argv)  # exits as the real CLI does, --help included
    echo(argv)
    dump_path = Path(parsed.get("perf_dump_path")) if parsed.get("perf_dump_path") else None
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
    output = None
    if parsed.get("save_output", False):  # the recorded picture's name, 64² (the log's is 1024²)
        output = Path(parsed.get("output_path", "outputs/")) / OK_OUTPUT_NAME
    commit = os.environ.get("SGLANG_GIT_COMMIT", "N/A")
    scale = float(os.environ.get("FAKE_SGLANG_STEP_SCALE", "1"))
    if sglang_cli.era() == "legacy":
        replay(OK_LOG, warmed_up=bool(parsed.get("warmup", False)))
        dump = json.loads((DATA / OK_DUMP).read_text(encoding="utf-8"))
        dump["commit_hash"] = commit
    else:
        run = current_run(parsed, dump_path, output, scale)
        write_chunks(sglang_logs.generate_log(run))
        dump = sglang_logs.perf_dump(
            run, commit=commit, recorded=json.loads((DATA / OK_DUMP).read_text("utf-8"))
        )
    for step in dump["denoise_steps_ms"]:
        step["duration_ms"] *= scale
    if output is not None:
        from PIL import Image

        output.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (200, 80, 20)).save(output)
    if dump_path is not None:
        if scenario == "dynamo_counters":
            dump["dynamo_counters"] = {
                "graph_breaks": 7,
                "unique_graphs": 9,
                "frames_compiled": 5,
                "recompiles": 2,
            }
        dump_path.write_text(json.dumps(dump, indent=2), encoding="utf-8")
    return 0


def write_chunks(chunks: list[sglang_logs.Chunk]) -> None:
    """Write log records and progress bars in the order the real process does, flushing each."""
    for chunk in chunks:
        stream = sys.stderr if chunk.stream == "stderr" else sys.stdout
        stream.write(chunk.text)
        stream.flush()


def current_run(
    parsed: sglang_cli.Parsed, dump_path: Path | None, output: Path | None, scale: float = 1.0
) -> sglang_logs.GenerateRun:
    """What 0.5.23's ``generate`` does with these arguments (its warmup mode resolved as it does)."""
    prompt = parsed.get("prompt", " ")
    server_args = {
        "model_path": parsed.get("model_path"),
        "num_gpus": parsed.get("num_gpus", 1),
        "enable_torch_compile": bool(parsed.get("enable_torch_compile", False)),
        "warmup_mode": sglang_logs.resolved_warmup_mode(parsed.values),
    }
    return sglang_logs.GenerateRun(
        prompt=" ".join(prompt) if isinstance(prompt, list) else str(prompt),
        width=int(parsed.get("width", 1024)),
        height=int(parsed.get("height", 1024)),
        steps=int(parsed.get("num_inference_steps", 50)),
        warmup_mode=str(server_args["warmup_mode"]),
        server_args=server_args,
        dump_path=str(dump_path.resolve()) if dump_path else None,
        output_path=str(output) if output else None,
        step_scale=scale,
    )


# ------------------------------------------------------------------ serve


def request_log(average_s: float, steps: int, *, warmup: bool = False, era: str = "legacy") -> str:
    """What sglang's scheduler prints for one request (stage profiler lines, tqdm, memory).

    Both eras end a served request with "Peak memory usage: X MB" (openai/utils.py). ``legacy``
    (0.5.10): a "Running pipeline stages" line first; a warmup is framed by "Processing warmup
    req..." / "Warmup req processed in". ``current`` (0.5.23): no stages line, and a warmup (the
    server's own here) shows only as the "Warmup requests" bar's frames.
    """
    lines = [f"Running pipeline stages: {PIPELINE}"] if era == "legacy" else []
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
    ]
    if era == "legacy":
        if not warmup:  # the same line in 0.5.10 (openai/utils.py); "Peak GPU memory" was DEBUG there
            lines.append(f"Peak memory usage: {SERVED_PEAK_MB:.2f} MB")
        if warmup:
            lines = [
                "Processing warmup req...",
                *lines,
                f"Warmup req processed in {average_s + 4.4:.2f} seconds",
            ]
    elif warmup:  # 0.5.23 logs no stage records of a warmup request: its bar is all there is
        shape = "1024x1024"
        first = sglang_logs.warmup_bar(0, shape, kind="server warmup req").lstrip("\r")
        last = sglang_logs.warmup_bar(1, shape, average_s + 4.4, kind="server warmup req").lstrip("\r")
        lines = [first, last]
    else:
        lines.append(f"Peak memory usage: {SERVED_PEAK_MB:.2f} MB")  # MiB: the old line's 46.51 GB
    return "\n".join(lines)


def served_log(averages: list[float], steps: int = 50, *, era: str = "legacy") -> str:
    """A whole served log: startup, the server's 1-step warmup, then one block per request."""
    blocks = [
        "Starting server...",
        request_log(SERVED_WARMUP_STEP_S, 1, warmup=True, era=era),
        "The server is fired up and ready to roll!",
    ]
    blocks += [request_log(average, steps, era=era) for average in averages]
    return "\n".join(
        f"[05-19 10:05:04] {line}" if line and not line[0].isspace() and "%|" not in line else line
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
    era = "current"
    warmup_mode = "server"
    served = 0
    lock = threading.Lock()
    warming = threading.Event()  # set while the server's own warmup runs (current era)
    request_warmup_done = False
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
            if self.scenario == "backend_dead":
                self._answer(
                    503, {"status": "unhealthy", "error": "Scheduler worker exited; restart the server."}
                )
            elif self.scenario == "never_ready" or _Handler.warming.is_set():
                self._answer_bytes(503, b"", "text/plain")  # 0.5.23: an empty 503 until its warmup ends
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
        self._request_based_warmup()
        if self.path == "/v1/videos":
            self._create_video(number, body, steps)
            return
        say(request_log(SERVED_BASE_S + number * SERVED_DELTA_S, steps, era=self.era))
        time.sleep(0.02)
        image = base64.b64encode(b"\x89PNG fake").decode()
        self._answer(200, {"id": f"req-{number}", "created": int(time.time()), "data": [{"b64_json": image}]})

    def _request_based_warmup(self) -> None:
        """0.5.23's ``--warmup-mode request``: a warmup copy of the first request runs before it."""
        with _Handler.lock:
            if self.era != "current" or self.warmup_mode != "request" or _Handler.request_warmup_done:
                return
            _Handler.request_warmup_done = True
        lines = request_log(SERVED_WARMUP_STEP_S, 1, warmup=True, era="current").replace(
            "server warmup", "warmup"
        )
        say(f"{lines}\nThe server is fired up and ready to roll!")

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
            say(request_log(SERVED_BASE_S + number * SERVED_DELTA_S, steps, era=self.era))
        self._answer(200, {"id": job["id"], "object": "video", "status": "queued", "size": job["size"]})


def serve(argv: list[str], scenario: str) -> int:
    parsed = sglang_cli.parse_or_exit("serve", argv)  # exits as the real CLI does, --help included
    era = sglang_cli.era()
    ignore_term_if_asked()
    worker = start_worker()
    echo(argv, pids=[os.getpid(), worker.pid])
    say("Starting server...\nScheduler bind at endpoint: tcp://127.0.0.1:5431")
    if scenario == "exit_early":
        print("RuntimeError: Initialization failed. Please see the error messages above.", flush=True)
        worker.kill()
        return 1
    _Handler.scenario = scenario
    _Handler.era = era
    # `sglang serve` passes warmup_mode="server" as a default; an explicit mode wins (0.5.23).
    _Handler.warmup_mode = str(parsed.get("warmup_mode") or "server")
    if era == "legacy":
        say(request_log(SERVED_WARMUP_STEP_S, 1, warmup=True))
    server = ThreadingHTTPServer(("127.0.0.1", int(parsed.get("port", 30000))), _Handler)
    server.daemon_threads = True
    say("Starting FastAPI server.")
    if era == "current" and _Handler.warmup_mode == "server":
        _Handler.warming.set()  # /health answers 503 until the synthetic warmup request is done
        threading.Thread(target=_server_warmup, args=(scenario,), daemon=True).start()
    elif scenario != "never_ready" and (era == "legacy" or _Handler.warmup_mode == "off"):
        say("The server is fired up and ready to roll!")
    server.serve_forever()
    return 0


def _server_warmup(scenario: str) -> None:
    """0.5.23's server-based warmup: once HTTP is live, a synthetic request; then ready."""
    time.sleep(float(os.environ.get("FAKE_SGLANG_SERVER_WARMUP_S", "0.3")))
    say(request_log(SERVED_WARMUP_STEP_S, 1, warmup=True, era="current"))
    if scenario != "never_ready":
        say("The server is fired up and ready to roll!")
        _Handler.warming.clear()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("generate", "serve"):
        print("usage: fake_sglang.py generate|serve [flags]", file=sys.stderr)
        return 2
    scenario = os.environ.get("FAKE_SGLANG_SCENARIO", "ok")
    return generate(argv[1:], scenario) if argv[0] == "generate" else serve(argv[1:], scenario)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
