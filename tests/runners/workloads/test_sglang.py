"""The sglang workload against a fake ``sglang`` that replays recorded logs: real child processes,
real process groups, a real HTTP server for serve mode. Timeouts are short; the file runs in seconds."""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from runners.jobspec import CaseSpec
from runners.parsing import RunStatus, parse_run
from runners.parsing._logtext import strip_ansi
from runners.parsing.served import summarize_served
from runners.workloads.base import WorkloadContext, WorkloadResult
from runners.workloads.cli.options import CliOptions
from runners.workloads.commandline import DEFAULT_GENERATE, DEFAULT_SERVE, benchmark_env, render_options
from runners.workloads.compile_log import CompileEventCounter, compile_counters, dump_counters
from runners.workloads.environment import NO_NVIDIA_SMI, EnvironmentProbe, interpreter_for
from runners.workloads.process import CANCELLED, LogCapture, describe_exit
from runners.workloads.registry import default_workloads
from runners.workloads.serve import ServeSettings
from runners.workloads.serve_api import image_request_body
from runners.workloads.sglang import SglangWorkload, build_generate_command, build_serve_command
from tests.fakes import fake_sglang
from tests.suite_cases import suite_case as read_suite_case
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
FAKE_SGLANG = ROOT / "tests" / "fakes" / "fake_sglang.py"
FAKE_SMI = ROOT / "tests" / "fakes" / "fake_nvidia_smi.py"
DATA = ROOT / "tests" / "data" / "sglang"
SUITES = ROOT / "tests" / "data" / "suites"
SHA = "669a9bd3c1e84f0d9a2b7e5f6c3d1a0b9e8f7a6c"
OPTIONS = DATA / "options"


def recorded(version: str, command: str = "generate") -> CliOptions:
    """The options a published sglang release accepts, as recorded from the real package."""
    table = json.loads((OPTIONS / f"{version}.json").read_text(encoding="utf-8"))
    return CliOptions.from_recorded(table, command)


def suite_case(slug: str) -> CaseSpec:
    """A case of the tests' suite, read the way the tracker reads it (runners may not import tracker)."""
    return read_suite_case(SUITES / "sglang-diffusion.toml", slug)


def small_case(mode: str = "generate", requests: int = 5, task: str = "t2i") -> CaseSpec:
    return CaseSpec(
        slug="fake",
        version=1,
        model="Qwen/Qwen-Image-2512",
        task=task,
        workload="sglang",
        mode=mode,
        num_gpus=2,
        requests=requests,
        timeout_s=60,
        params={"prompt": "a red fox", "width": 1024, "height": 1024, "num-inference-steps": 50, "seed": 42},
        flags={"enable-torch-compile": True, "warmup": True},
    )


class Harness:
    """A workload wired to the fakes, and the files the fakes leave for assertions."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.echo_path = tmp_path / "echo.json"
        self.lines: list[str] = []

    def workload(
        self,
        scenario: str = "ok",
        *,
        probe: EnvironmentProbe | None = None,
        base_env_extra: dict[str, str] | None = None,
        **options: Any,
    ) -> SglangWorkload:
        base_env = {
            "PATH": os.environ.get("PATH", ""),
            "FAKE_SGLANG_SCENARIO": scenario,
            "FAKE_SGLANG_ECHO": str(self.echo_path),
            "FAKE_SGLANG_IGNORE_TERM": "1",  # stopping must escalate to SIGKILL to succeed
            "CUDA_VISIBLE_DEVICES": "7",  # inherited; the workload must replace it
            **(base_env_extra or {}),
        }
        settings: dict[str, Any] = {
            "generate_executable": (sys.executable, str(FAKE_SGLANG), "generate"),
            "serve_executable": (sys.executable, str(FAKE_SGLANG), "serve"),
            "base_env": base_env,
            "probe": probe,
            "kill_grace_s": 0.3,
            "serve": ServeSettings(ready_timeout_s=3.0, poll_interval_s=0.05),
        }
        settings.update(options)
        return SglangWorkload(**settings)

    def context(self, *, timeout_s: float = 20.0, **options: Any) -> WorkloadContext:
        settings: dict[str, Any] = {
            "tree": self.tmp / "tree",
            "job_dir": self.tmp / "job",
            "gpu_ids": (0, 1),
            "candidate_sha": SHA,
            "timeout_s": timeout_s,
            "on_output": self.lines.append,
        }
        settings.update(options)
        (self.tmp / "tree").mkdir(exist_ok=True)
        return WorkloadContext(**settings)

    def run(
        self, scenario: str = "ok", case: CaseSpec | None = None, *, timeout_s: float = 20.0, **options: Any
    ) -> WorkloadResult:
        return self.workload(scenario, **options).run(case or small_case(), self.context(timeout_s=timeout_s))

    @property
    def echo(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.echo_path.read_text(encoding="utf-8"))
        return data


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie waiting for init counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc").is_dir():
        try:
            text = stat.read_text()
        except FileNotFoundError:
            return True
        return text[text.rfind(")") + 2] in "ZX"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def port_closed(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


# ------------------------------------------------------------------ command lines


def test_generate_command_for_qwen_image_is_the_maintainers_command() -> None:
    case = suite_case("qwen-image-t2i-1024")
    command = build_generate_command(case, Path("/job/perf_dump.json"), DEFAULT_GENERATE, recorded("0.5.23"))
    assert command == [
        "sglang", "generate",
        "--model-path", "Qwen/Qwen-Image-2512",
        "--prompt", "A cinematic photo of a red fox sitting in a snowy forest at dawn, highly detailed",
        "--negative-prompt", " ",
        "--width", "1024",
        "--height", "1024",
        "--num-inference-steps", "50",
        "--guidance-scale", "4.0",
        "--seed", "42",
        "--enable-torch-compile",
        "--warmup-mode", "request",  # the case's warmup = true, as 0.5.23 spells it
        "--dit-cpu-offload", "false",
        "--text-encoder-cpu-offload", "false",
        "--perf-dump-path", "/job/perf_dump.json",
    ]  # fmt: skip


def test_the_same_case_on_a_release_before_warmup_mode_says_warmup() -> None:
    case = suite_case("qwen-image-t2i-1024")
    command = build_generate_command(case, Path("/p.json"), DEFAULT_GENERATE, recorded("0.5.10"))
    assert command[command.index("--enable-torch-compile") + 1] == "--warmup"
    assert "--warmup-mode" not in command


def test_generate_command_for_wan_keeps_flags_in_suite_order() -> None:
    executable = (sys.executable, "-m", "toydit", "generate")
    build = recorded("0.5.23")
    command = build_generate_command(suite_case("wan2.2-t2v-a14b"), Path("/j/d.json"), executable, build)
    assert command == [
        *executable,
        "--model-path", "Wan-AI/Wan2.2-T2V-A14B-Diffusers",
        "--prompt", "A cat and a dog baking a cake together in a kitchen, cinematic lighting",
        "--width", "1280",
        "--height", "720",
        "--num-frames", "81",
        "--num-inference-steps", "40",
        "--guidance-scale", "5.0",
        "--seed", "42",
        "--num-gpus", "8",
        "--enable-cfg-parallel",
        "--ulysses-degree", "4",
        "--dit-layerwise-offload", "true",
        "--enable-torch-compile",
        "--warmup-mode", "request",
        "--perf-dump-path", "/j/d.json",
    ]  # fmt: skip


def test_params_come_in_command_order_whatever_order_a_json_store_gave_them() -> None:
    case = suite_case("qwen-image-t2i-1024")
    shuffled = CaseSpec(**{**case.__dict__, "params": dict(sorted(case.params.items()))})
    build = recorded("0.5.23")
    assert build_generate_command(shuffled, Path("/p"), (), build) == build_generate_command(
        case, Path("/p"), (), build
    )


def test_serve_command_and_request_body_for_a_served_case() -> None:
    case = suite_case("qwen-image-2.1-serve-gb300")
    assert build_serve_command(case, 30010, DEFAULT_SERVE, recorded("0.5.23", "serve")) == [
        "sglang", "serve", "--model-path", "Qwen/Qwen-Image-2.1",
        "--num-gpus", "2", "--tp-size", "2", "--enable-torch-compile", "--warmup-mode", "request",
        "--port", "30010",
    ]  # fmt: skip
    assert image_request_body(case) == {
        "prompt": "A cinematic photo of a red fox sitting in a snowy forest at dawn, highly detailed",
        "n": 1,
        "response_format": "b64_json",
        "size": "1024x1024",
        "num_inference_steps": 50,
        "guidance_scale": 4.0,
        "seed": 42,
    }


def test_flag_values_render_as_sglang_parses_them() -> None:
    options = [("a", True), ("b", False), ("c", None), ("d", 0), ("e", 2.5), ("f", ["x", 1]), ("g", "false")]
    assert render_options(options) == ["--a", "--d", "0", "--e", "2.5", "--f", "x", "1", "--g", "false"]


def test_benchmark_env_drops_an_inherited_gpu_list_when_no_gpu_is_given() -> None:
    env = benchmark_env(
        {"CUDA_VISIBLE_DEVICES": "3", "PYTHONPATH": "/lib"},
        candidate_sha="abc",
        gpu_ids=(),
        pythonpath=Path("/t"),
    )
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert env["PYTHONPATH"] == "/t:/lib"
    assert env["SGLANG_GIT_COMMIT"] == "abc"


# ------------------------------------------------------------------ generate


def test_ok_run_streams_the_log_and_reads_the_dump(harness: Harness) -> None:
    case = small_case()
    result = harness.run("ok", case)
    assert result.failure is None
    assert result.exit_code == 0
    assert not result.timed_out
    assert not result.log_truncated
    echo = harness.echo
    dump_path = harness.tmp / "job" / "perf_dump.json"
    outputs = harness.tmp / "job" / "outputs"
    assert echo["argv"] == [
        *build_generate_command(case, dump_path, (), recorded("0.5.23")),
        "--save-output",
        "--output-path",
        str(outputs),
    ]
    assert echo["argv"][echo["argv"].index("--warmup-mode") + 1] == "request"
    assert echo["env"] == {
        "SGLANG_GIT_COMMIT": SHA,
        "CUDA_VISIBLE_DEVICES": "0,1",
        "TORCH_LOGS": "graph_breaks,recompiles",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": None,
        "TORCHINDUCTOR_CACHE_DIR": None,
        "SGLANG_DIFFUSION_SYNC_STAGE_PROFILING": "1",  # device-synchronised step times
    }
    assert echo["cwd"] == str(harness.tmp / "job")  # outputs stay out of the tree
    assert result.command.startswith(f"CUDA_VISIBLE_DEVICES=0,1 SGLANG_GIT_COMMIT={SHA} TORCH_LOGS=")
    assert "--prompt 'a red fox'" in result.command
    assert "[DenoisingStage] average time per step: 0.2637 seconds" in result.log_text
    # The display saw each line as printed; the log keeps them cleaned of colour codes, once.
    assert "\x1b[" in "".join(harness.lines)
    assert "\x1b[" not in result.log_text
    assert [strip_ansi(line) for line in harness.lines] == result.log_text.split("\n")[:-1]
    assert result.perf_dump_text is not None
    assert json.loads(result.perf_dump_text)["commit_hash"] == SHA
    # The picture it saved (as the log says, relative to the job directory) is read and deleted.
    assert result.output is not None
    assert (result.output.media, result.output.width, result.output.height) == ("image", 64, 64)
    assert result.output.file_name.endswith("_20260519-091440_f2a74de4.png")
    assert result.warnings == ()
    assert list(outputs.iterdir()) == []

    parsed = parse_run(result.log_text, result.perf_dump_text)
    dump = json.loads((DATA / "perf_dump_qwen_image_669a9bd.json").read_text(encoding="utf-8"))
    steps = [step["duration_ms"] for step in dump["denoise_steps_ms"]]
    assert parsed.status is RunStatus.OK
    assert parsed.denoise_step_ms == pytest.approx(statistics.median(steps))
    assert parsed.denoise_step_count == 50
    assert parsed.e2e_ms == pytest.approx(dump["total_duration_ms"])
    assert parsed.sources == ("log", "perf_dump")
    # torch.compile is on and no event was logged: zero is a real count here.
    assert result.compile.graph_breaks == 0
    assert result.compile.recompiles == 0


def test_crash_keeps_the_log_and_names_the_exit_code(harness: Harness) -> None:
    result = harness.run("crash")
    assert result.failure == "exited with code 1"
    assert result.exit_code == 1
    assert result.perf_dump_text is None
    assert "Error during execution after 812.4410 ms" in result.log_text
    parsed = parse_run(result.log_text, result.perf_dump_text)
    assert parsed.status is RunStatus.FAILED
    assert parsed.failure_reason is not None
    assert "DecodingStage failed" in parsed.failure_reason


def test_hang_times_out_and_kills_the_whole_process_group(harness: Harness) -> None:
    started = time.monotonic()
    result = harness.run("hang", timeout_s=1.5)
    assert time.monotonic() - started < 60  # ended at its timeout, not after the fake's 600 s sleep
    assert result.timed_out
    assert result.failure == "timed out after 1.5 s"
    assert result.exit_code == -9  # it ignored SIGTERM, so the grace period ended in SIGKILL
    assert "[DenoisingStage] started..." in result.log_text  # the lines before the hang are kept
    leader, worker = harness.echo["pids"]
    assert gone(leader)
    assert gone(worker), "the benchmark's worker process outlived it"


def pids_echoed(harness: Harness) -> bool:
    """Whether the fake benchmark has started its worker and written both pids."""
    try:
        return "pids" in harness.echo
    except (FileNotFoundError, json.JSONDecodeError):
        return False


def test_cancel_stops_a_running_benchmark(harness: Harness) -> None:
    cancel = threading.Event()

    def cancel_once_running() -> None:
        wait_until(lambda: pids_echoed(harness), 30, "the benchmark to start")
        cancel.set()

    canceller = threading.Thread(target=cancel_once_running, daemon=True)
    canceller.start()
    started = time.monotonic()
    result = harness.workload("hang").run(small_case(), harness.context(cancel=cancel))
    canceller.join(timeout=30)
    assert result.failure == CANCELLED
    assert not result.timed_out
    assert time.monotonic() - started < 60  # cancelled, not after the fake's 600 s sleep
    assert all(gone(pid) for pid in harness.echo["pids"])


def test_no_timing_exits_zero_and_the_parser_fails_it(harness: Harness) -> None:
    result = harness.run("no_timing")
    assert result.failure is None
    assert result.exit_code == 0
    assert result.perf_dump_text is None
    parsed = parse_run(result.log_text, result.perf_dump_text)
    assert parsed.status is RunStatus.FAILED
    assert parsed.failure_reason == "no denoising stage found in log"


def test_flood_is_capped_head_and_tail(harness: Harness) -> None:
    limit = 64 * 1024
    result = harness.workload("flood").run(small_case(), harness.context(max_log_bytes=limit))
    assert result.failure is None
    assert result.log_truncated
    lines = result.log_text.splitlines()
    markers = [
        line for line in lines if line.startswith("[perftrack: ") and line.endswith(" bytes of log omitted]")
    ]
    assert len(markers) == 1
    assert len(result.log_text.encode()) <= limit + len(markers[0]) + 1
    assert lines[0].startswith("flood line 0:")  # the head: how it started
    assert lines[-1].endswith("Avg peak: 46938.00 MB")  # the tail: how it ended
    assert len(harness.lines) > 20000  # the display saw every line, stored or not
    assert parse_run(result.log_text, result.perf_dump_text).status is RunStatus.OK


def test_a_sigkilled_benchmark_is_reported_by_signal(harness: Harness) -> None:
    result = harness.run("oom_kill")
    assert result.exit_code == -9
    assert result.failure == "killed by SIGKILL (out of memory?)"
    assert "Loading required modules" in result.log_text


def test_graph_breaks_and_recompiles_are_counted_once_per_event(harness: Harness) -> None:
    result = harness.run("graph_breaks")
    assert result.failure is None
    # Two ranks log the same three breaks (one a suppressed repeat in frame 2) and one recompile.
    assert result.compile.graph_breaks == 3
    assert result.compile.recompiles == 1
    assert result.compile.unique_graphs is None


def test_dynamo_counters_in_the_dump_win_over_the_log(harness: Harness) -> None:
    result = harness.run("dynamo_counters")
    assert (result.compile.graph_breaks, result.compile.recompiles) == (7, 2)
    assert (result.compile.unique_graphs, result.compile.frames_compiled) == (9, 5)


def test_a_missing_executable_is_a_setup_failure_not_an_exception(harness: Harness) -> None:
    missing = str(harness.tmp / "no-such-sglang")
    result = harness.run("ok", generate_executable=(missing, "generate"))
    assert result.failure is not None
    assert result.failure.startswith(f"setup failed: could not start {missing!r}: executable not found")
    assert result.exit_code is None
    served = harness.run("ok", small_case("serve"), serve_executable=(missing, "serve"))
    assert served.failure is not None
    assert served.failure.startswith(f"setup failed: could not start {missing!r}: executable not found")


def test_toy_configuration_runs_in_the_tree_with_it_on_pythonpath(harness: Harness) -> None:
    cache = str(harness.tmp / "inductor")
    result = harness.run(
        "ok", workdir="tree", tree_on_pythonpath=True, extra_env={"TORCHINDUCTOR_CACHE_DIR": cache}
    )
    assert result.failure is None
    tree = str(harness.tmp / "tree")
    assert harness.echo["cwd"] == tree
    assert harness.echo["env"]["PYTHONPATH"] == tree
    assert harness.echo["env"]["TORCHINDUCTOR_CACHE_DIR"] == cache
    assert f"TORCHINDUCTOR_CACHE_DIR={cache} PYTHONPATH={tree} " in result.command


# ------------------------------------------------------------------ environment


def test_environment_without_nvidia_smi(harness: Harness) -> None:
    probe = EnvironmentProbe(nvidia_smi=(str(harness.tmp / "nvidia-smi"),))
    result = harness.run("ok", probe=probe, probe_versions=False)
    env = result.environment
    assert env["gpu"] == NO_NVIDIA_SMI
    assert env["gpu_count"] == 0
    assert env["host"]
    assert env["os"]
    assert env["python"]
    assert env["cpu_count"] == os.cpu_count()
    assert not any(key.endswith(("_before", "_after")) for key in env)
    # 0.5.23 warms up silently (its bar is no log line without CI=true): only the whole process is timed.
    assert set(env["timings"]) == {"process_s"}
    assert env["timings"]["process_s"] > 0
    json.dumps(env)  # stored as JSON


def test_environment_with_nvidia_smi_before_and_after(harness: Harness) -> None:
    state = harness.tmp / "smi-state"
    probe = EnvironmentProbe(nvidia_smi=(sys.executable, str(FAKE_SMI), f"--fake-state={state}"))
    result = harness.run("ok", probe=probe, probe_versions=False)
    env = result.environment
    assert env["gpu"] == "NVIDIA H200"
    assert env["gpu_count"] == 2  # only the job's GPUs
    assert env["gpu_driver"] == "570.86.15"
    assert env["cuda_version"] == "12.8"
    assert env["gpu_sm_clock_mhz_before"] == [1980.0, 1980.0]
    assert env["gpu_mem_clock_mhz_after"] == [3201.0, 3201.0]
    assert env["gpu_power_w_before"] == [118.5, 119.5]
    before, after = env["gpu_temperature_c_before"][0], env["gpu_temperature_c_after"][0]
    assert after > before  # read again after the run, not copied
    json.dumps(env)


def test_unreadable_gpu_readings_become_none(tmp_path: Path) -> None:
    probe = EnvironmentProbe(nvidia_smi=(sys.executable, str(FAKE_SMI)))
    assert probe.gpu_state([6, 7], "before")["gpu_power_w_before"] == [124.5, None]


def test_versions_come_from_the_benchmarks_interpreter() -> None:
    versions = EnvironmentProbe().package_versions(sys.executable, dict(os.environ))
    assert versions["torch"] == metadata.version("torch")
    assert versions["sglang"] is None
    assert versions["sglang_error"] == "PackageNotFoundError"
    broken = EnvironmentProbe().package_versions("/no/such/python", {})
    assert "could not run /no/such/python" in broken["versions_error"]


def test_interpreter_is_found_from_a_console_scripts_shebang(tmp_path: Path) -> None:
    script = tmp_path / "sglang"
    script.write_text("#!/opt/venv/bin/python3.11\nprint('hi')\n")
    script.chmod(0o755)
    assert interpreter_for([str(script), "generate"], {"PATH": ""}) == "/opt/venv/bin/python3.11"
    assert interpreter_for([sys.executable, "-m", "toydit"], {}) == sys.executable
    assert interpreter_for(["no-such-tool"], {"PATH": str(tmp_path)}) is None


# ------------------------------------------------------------------ serve


def test_serve_times_each_request_and_stops_the_server(harness: Harness) -> None:
    case = small_case("serve", requests=5)
    result = harness.run("ok", case)
    assert result.failure is None, result.failure
    assert len(result.request_latencies_ms) == 5
    assert all(latency > 0 for latency in result.request_latencies_ms)
    port = int(harness.echo["argv"][harness.echo["argv"].index("--port") + 1])
    assert harness.echo["env"]["SGLANG_GIT_COMMIT"] == SHA
    assert result.command.endswith(
        '# then 1 warmup + 5 timed x POST /v1/images/generations {"prompt": "a red fox", "n": 1, '
        '"response_format": "b64_json", "size": "1024x1024", "num_inference_steps": 50, "seed": 42}'
    )
    assert port_closed(port)
    assert all(gone(pid) for pid in harness.echo["pids"])

    summary = summarize_served(result.log_text, result.request_latencies_ms)
    assert summary.status is RunStatus.OK
    # The server's warmup and the client's warmup (average 263.7 ms) are left out: the timed
    # requests averaged 264.7 ... 268.7 ms per step.
    assert summary.denoise_step_ms == pytest.approx(266.7)
    assert summary.denoise_step_basis == "median"
    assert summary.e2e_ms == pytest.approx(statistics.median(result.request_latencies_ms))
    assert (summary.requests_seen, summary.warmup_requests) == (7, 2)


def test_serve_never_ready_fails_after_the_readiness_timeout(harness: Harness) -> None:
    started = time.monotonic()
    serve = ServeSettings(ready_timeout_s=1.0, poll_interval_s=0.05)
    result = harness.run("never_ready", small_case("serve"), serve=serve)
    # The readiness timeout ended it (the message below says so), not the job's 20 s timeout.
    assert 1.0 <= time.monotonic() - started < 20
    assert result.failure is not None
    assert result.failure.startswith("server not ready after 1 s (GET /health never answered 200)")
    assert not result.timed_out
    assert result.request_latencies_ms == ()
    assert all(gone(pid) for pid in harness.echo["pids"])


def test_serve_waits_out_the_servers_own_warmup(harness: Harness) -> None:
    # sglang 0.5.23's `serve` warms itself up (the server mode) when no mode is given: /health
    # answers 503 meanwhile, and the runner waits rather than calling it a failure.
    case = small_case("serve", requests=2)
    case = CaseSpec(**{**case.__dict__, "flags": {"enable-torch-compile": True}})
    workload = harness.workload("ok", base_env_extra={"FAKE_SGLANG_SERVER_WARMUP_S": "1.0"})
    result = workload.run(case, harness.context())
    assert result.failure is None, result.failure
    assert "--warmup-mode" not in harness.echo["argv"]
    assert "server warmup req (1024x1024, 1 step)" in result.log_text
    assert len(result.request_latencies_ms) == 2


def test_serve_with_a_dead_backend_fails_at_once(harness: Harness) -> None:
    started = time.monotonic()
    serve = ServeSettings(ready_timeout_s=30.0, poll_interval_s=0.05)
    result = harness.run("backend_dead", small_case("serve"), serve=serve)
    assert time.monotonic() - started < 20  # not the readiness timeout
    assert (
        result.failure == "server unhealthy before it was ready: Scheduler worker exited; restart the server."
    )
    assert all(gone(pid) for pid in harness.echo["pids"])


def test_serve_exiting_before_ready_is_a_failure(harness: Harness) -> None:
    result = harness.run("exit_early", small_case("serve"))
    assert result.failure == "server exited with code 1 before it was ready"
    assert result.exit_code == 1
    assert "Initialization failed" in result.log_text


def test_serve_request_error_fails_and_stops_the_server(harness: Harness) -> None:
    result = harness.run("request_error", small_case("serve", requests=5))
    assert (
        result.failure == "request 2 of 5 failed: HTTP 500: CUDA out of memory. Tried to allocate 20.00 GiB"
    )
    assert len(result.request_latencies_ms) == 1
    assert "Error during execution after 812.4410 ms" in result.log_text
    port = int(harness.echo["argv"][harness.echo["argv"].index("--port") + 1])
    assert port_closed(port)
    assert all(gone(pid) for pid in harness.echo["pids"])


def test_serve_request_hang_times_out_and_stops_the_server(harness: Harness) -> None:
    result = harness.run("request_hang", small_case("serve", requests=3), timeout_s=2.0)
    assert result.timed_out
    assert result.failure == "timed out after 2 s (waiting for request 1 of 3)"
    assert all(gone(pid) for pid in harness.echo["pids"])


def test_serve_refuses_image_edits_without_starting_anything(harness: Harness) -> None:
    result = harness.run("ok", small_case("serve", task="i2i"))
    assert result.failure is not None
    assert "task 'i2i' is not supported in serve mode" in result.failure
    assert not harness.echo_path.exists()


# ------------------------------------------------------------------ pieces


def test_compile_counter_reads_torch_log_lines() -> None:
    counter = CompileEventCounter()
    for rank in (0, 1, 0):  # a rank repeating itself (two handlers) is not a new event either
        for record in fake_sglang.compile_events(rank, 100 + rank):
            for line in record.split("\n"):
                counter.feed(line)
    assert (counter.graph_breaks, counter.recompiles, counter.recompile_limit_hits) == (3, 1, 1)
    plain = CompileEventCounter()
    plain.feed("Graph break in user code at /m.py:3")  # a logger without torch's formatter
    plain.feed("Graph break: call_function UserDefinedObjectVariable from user code at:")  # torch < 2.6
    plain.feed("Graph Break Reason: ...")
    assert plain.graph_breaks == 2


def test_compile_counter_reads_lines_ending_in_crlf() -> None:
    # A child writing "\r\n" (a pseudo-terminal does): split on "\n", every line keeps its "\r".
    counter = CompileEventCounter()
    for record in fake_sglang.compile_events(0, 100):
        for line in record.split("\n"):
            counter.feed(line + "\r")
    assert (counter.graph_breaks, counter.recompiles, counter.recompile_limit_hits) == (3, 1, 1)


def test_dump_counters_take_only_valid_values() -> None:
    dump = {
        "dynamo_counters": {"graph_breaks": 4, "recompiles": -1, "unique_graphs": True, "frames_compiled": 2}
    }
    assert dump_counters(json.dumps(dump)) == {"graph_breaks": 4, "frames_compiled": 2}
    assert dump_counters("{broken") == {}
    assert dump_counters(None) == {}
    uncompiled = compile_counters(CompileEventCounter(), None, compile_enabled=False)
    assert uncompiled.graph_breaks is None
    assert uncompiled.recompiles is None


def test_log_capture_keeps_head_and_tail() -> None:
    seen: list[str] = []
    capture = LogCapture(100, seen.append)
    for number in range(50):
        capture.add(f"line {number:02d}")  # 8 bytes each with the newline
    text = capture.text()
    assert capture.truncated
    lines = text.splitlines()
    assert lines[:6] == [f"line {n:02d}" for n in range(6)]
    assert lines[6] == f"[perftrack: {(50 - 12) * 8} bytes of log omitted]"
    assert lines[7:] == [f"line {n:02d}" for n in range(44, 50)]
    assert len(seen) == 50


def test_log_capture_survives_a_broken_display() -> None:
    def broken(line: str) -> None:
        raise RuntimeError("display gone")

    capture = LogCapture(1000, broken)
    capture.add("one")
    capture.add("two")
    assert capture.text() == "one\ntwo\n"
    assert not capture.truncated


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, None),
        (3, "exited with code 3"),
        (-9, "killed by SIGKILL (out of memory?)"),
        (-11, "killed by SIGSEGV (segmentation fault)"),
        (-15, "killed by SIGTERM"),
    ],
)
def test_exit_descriptions(code: int, text: str | None) -> None:
    assert describe_exit(code) == text


def test_default_workloads_offer_real_sglang_and_the_toy(tmp_path: Path) -> None:
    workloads = default_workloads(sglang="python -m sglang.cli", cache_dir=tmp_path)
    real, toy = workloads["sglang"], workloads["toy"]
    assert isinstance(real, SglangWorkload)
    assert isinstance(toy, SglangWorkload)
    assert real.generate_executable == ("python", "-m", "sglang.cli", "generate")
    assert real.workdir == "job_dir"
    assert toy.generate_executable == (sys.executable, "-m", "toydit", "generate")
    assert (toy.workdir, toy.tree_on_pythonpath) == ("tree", True)
    # The ISA setting in the environment too: a run forked from a preloaded interpreter imported
    # torch before the toy could set it, and must compile with the same inductor config.
    # One compile thread: a cold compile in the run's own process, without a pool of workers.
    assert toy.extra_env == {
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "TORCHINDUCTOR_VEC_ISA_OK": "1",
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }


def test_package_versions_read_torch_s_cuda_without_importing_torch(tmp_path: Path) -> None:
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('importing torch costs seconds per job')\n")
    (fake / "version.py").write_text("cuda: Optional[str] = '12.8'\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    versions = EnvironmentProbe().package_versions(sys.executable, env)
    assert versions["torch_cuda"] == "12.8"
    assert "torch_cuda_error" not in versions


PIPELINE_CLI = """import json, sys
from pathlib import Path
log = Path(sys.argv[1])
argv = sys.argv[2:]
if "--help" in argv:
    with log.open("a") as calls:
        calls.write(json.dumps(argv) + "\\n")
    print("options:\\n  --model-path MODEL_PATH\\n  --prompt PROMPT\\n  --perf-dump-path PERF_DUMP_PATH")
    print("  --save-output\\n  --output-path OUTPUT_PATH")
    if "--model-path" in argv:  # the options the model's pipeline adds, as sglang 0.5.23 lists them
        print("  --flux3-alpha FLUX3_ALPHA")
    sys.exit(0)
Path(str(log) + ".run").write_text(json.dumps(argv))
"""


def test_a_pipelines_own_option_is_asked_for_with_the_model(harness: Harness) -> None:
    script = harness.tmp / "pipeline_cli.py"
    script.write_text(PIPELINE_CLI, encoding="utf-8")
    calls = harness.tmp / "help-calls"
    executable = (sys.executable, str(script), str(calls), "generate")
    case = CaseSpec(**{**small_case().__dict__, "flags": {"flux3-alpha": 0.5}, "params": {"prompt": "a fox"}})
    result = harness.run("ok", case, generate_executable=executable)
    assert result.failure is None, result.failure
    asked = [json.loads(line) for line in calls.read_text().splitlines()]
    # The plain --help first (once per commit, whatever the model), then with the model's path.
    assert asked == [["generate", "--help"], ["generate", "--model-path", case.model, "--help"]]
    ran = json.loads((harness.tmp / "help-calls.run").read_text())
    assert ran[ran.index("--flux3-alpha") + 1] == "0.5"
    # Another case of the same commit asks nothing again.
    workload = harness.workload("ok", generate_executable=executable)
    for _ in range(2):
        workload.run(case, harness.context())
    assert len(calls.read_text().splitlines()) == 4  # two more for the new workload's cache, then none
