"""An evidence job on the runner: the toy at the graph-break commit, run as the agent runs it with
``--profile`` and ``TORCH_LOGS`` on; the trace is found, gzipped, capped and uploaded as a file."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.agent import EVIDENCE_PROFILED_STEPS, Agent, AgentConfig
from runners.candidates import BuiltCandidate, CandidateBuilder
from runners.client import TrackerClient
from runners.jobspec import CandidateSpec, CaseSpec, JobSpec, RepositorySpec
from runners.parsing import parse_run
from runners.payload import job_result
from runners.toy import create_toy_repository
from runners.workloads.base import CapturedFile, WorkloadContext, WorkloadResult
from runners.workloads.profiling import (
    PROFILE_DIR_NAME,
    PROFILER_DIR_VARIABLES,
    collect_trace,
    find_trace,
    profile_env,
    trace_file,
)
from runners.workloads.sglang import SglangWorkload

CASE = CaseSpec(
    slug="toy-t2i",
    version=1,
    model="toydit/ToyDiT-T2I",
    task="t2i",
    workload="toy",
    mode="generate",
    num_gpus=1,
    requests=1,
    timeout_s=300,
    params={"prompt": "a red fox", "num-inference-steps": 8, "seed": 42},
    flags={"enable-torch-compile": True, "warmup": True},
)


class Recording:
    """A workload that records the context it was given."""

    def __init__(self) -> None:
        self.contexts: list[WorkloadContext] = []

    def run(self, case: CaseSpec, context: WorkloadContext) -> WorkloadResult:
        self.contexts.append(context)
        return WorkloadResult(command="", log_text="")


def spec(reason: str) -> JobSpec:
    return JobSpec(
        job_id=7,
        attempt=1,
        reason=reason,
        hardware="cpu",
        repository=RepositorySpec(name="toy", url="/nowhere"),
        candidate=CandidateSpec(base_sha="a" * 40),
        case=CASE,
    )


def test_only_an_evidence_job_is_profiled(tmp_path: Path) -> None:
    recording = Recording()
    agent = Agent(
        AgentConfig(name="cpu-1", hardware="cpu", gpus=1, workdir=tmp_path),
        TrackerClient("http://127.0.0.1:9", "token"),
        CandidateBuilder(tmp_path),
        {"toy": recording},
    )
    built = BuiltCandidate(tmp_path, "a" * 40, "a" * 40, "b" * 40, (), (), ())
    for reason in ("nightly", "evidence"):
        agent._run_workload(spec(reason), built, tmp_path / reason)
    assert [context.profile_steps for context in recording.contexts] == [0, EVIDENCE_PROFILED_STEPS]


def test_a_trace_is_gzipped_and_one_over_the_limit_is_left_out(tmp_path: Path) -> None:
    plain = tmp_path / "profile" / "trace.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps({"traceEvents": []}))
    captured = trace_file(plain)
    assert isinstance(captured, CapturedFile)
    assert captured.name == "trace.json.gz"
    assert json.loads(gzip.decompress(captured.content)) == {"traceEvents": []}
    assert "over the upload limit" in str(trace_file(plain, max_bytes=10))
    # Without the log line, the newest trace in the profile directory is taken.
    assert collect_trace("no saved line", tmp_path)[0][0].name == "trace.json.gz"
    assert collect_trace("", tmp_path / "elsewhere") == ((), "the profiled run left no profiler trace")


def test_the_logged_trace_is_found_through_its_colour_codes(tmp_path: Path) -> None:
    # runtime/utils/profiler.py: f"Saved profiler traces to: {CYAN}{trace_path}{RESET}", always coloured;
    # the path is the rest of the line, spaces and all.
    job = tmp_path / "job 7"
    directory = job / PROFILE_DIR_NAME
    directory.mkdir(parents=True)
    logged = directory / "8d3f61c2-denoise-global-rank0.trace.json.gz"
    logged.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    newer = directory / "other.trace.json.gz"  # what the newest-file fallback would take instead
    newer.write_bytes(gzip.compress(b"{}"))
    os.utime(logged, (1, 1))
    log = f"[06-02 14:22:09] Saved profiler traces to: \x1b[1;36m{logged}\x1b[0;0m\n"
    assert find_trace(log, directory) == logged
    assert find_trace(log.replace("\x1b[1;36m", "").replace("\x1b[0;0m", ""), directory) == logged
    files, warning = collect_trace(log, job)
    assert warning is None
    assert files[0].name == logged.name
    assert gzip.decompress(files[0].content) == b'{"traceEvents": []}'


def sglang_profiler_dir(env: dict[str, str]) -> str:
    """Where sglang 0.5.14-0.5.23 writes traces (profiler.py, _resolve_profiler_log_dir)."""
    return env.get("SGLANG_DIFFUSION_TORCH_PROFILER_DIR") or env.get("SGLANG_TORCH_PROFILER_DIR", "./logs")


def test_the_trace_lands_in_the_job_directory_whatever_the_host_sets(tmp_path: Path) -> None:
    assert profile_env(tmp_path, 0) == {}
    expected = str((tmp_path / PROFILE_DIR_NAME).absolute())
    assert profile_env(tmp_path, 3) == dict.fromkeys(PROFILER_DIR_VARIABLES, expected)
    assert set(PROFILER_DIR_VARIABLES) == {"SGLANG_DIFFUSION_TORCH_PROFILER_DIR", "SGLANG_TORCH_PROFILER_DIR"}
    hosts = [
        {},
        {"SGLANG_TORCH_PROFILER_DIR": "/scratch/theirs"},
        {"SGLANG_DIFFUSION_TORCH_PROFILER_DIR": "/scratch/theirs"},
        dict.fromkeys(PROFILER_DIR_VARIABLES, "/scratch/theirs"),
    ]
    for host in hosts:
        env = {**host, **profile_env(tmp_path, 3)}
        assert sglang_profiler_dir(env) == expected
        assert env["SGLANG_TORCH_PROFILER_DIR"] == expected  # 0.5.10 reads only this one
    relative = Path("job")  # sglang's envs.py asks for an absolute path
    assert all(Path(value).is_absolute() for value in profile_env(relative, 1).values())


@pytest.mark.slow
def test_the_toy_at_the_graph_break_commit_uploads_its_trace_and_its_graph_breaks(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    toy = create_toy_repository(tmp_path / "repo")
    tree = tmp_path / "tree"
    sha = toy.commit("04-fused-layernorm").sha
    subprocess.run(
        ["git", "-C", str(toy.path), "worktree", "add", "--quiet", "--detach", str(tree), sha], check=True
    )
    workload = SglangWorkload(
        generate_executable=(sys.executable, "-m", "toydit", "generate"),
        workdir="tree",
        tree_on_pythonpath=True,
        probe=None,
        cpu_sampler=None,
        extra_env={
            "TOYDIT_COMPILE_BACKEND": "aot_eager",
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        },
    )
    context = WorkloadContext(
        tree=tree, job_dir=tmp_path / "job", candidate_sha=sha, timeout_s=300, profile_steps=3
    )
    result = workload.run(CASE, context)
    assert result.failure is None, result.log_text[-3000:]
    assert result.command.startswith("SGLANG_GIT_COMMIT=")
    assert "TORCH_LOGS=graph_breaks,recompiles" in result.command
    assert "--profile --num-profiled-timesteps 3" in result.command
    assert (
        "[__graph_breaks] Graph break in user code at " in result.log_text
    )  # the compile log is in the raw log
    assert "Saved profiler traces to: " in result.log_text
    [trace] = result.files
    assert trace.name.endswith(".trace.json.gz")
    events = json.loads(gzip.decompress(trace.content))["traceEvents"]
    assert sum(1 for event in events if str(event.get("name", "")).startswith("ProfilerStep#")) == 3
    assert result.environment["profile"] == {"steps": 3, "trace": [trace.name]}
    upload = job_result(parse_run(result.log_text, result.perf_dump_text), attempt=1, workload=result)
    [sent] = upload.files
    assert sent.name == trace.name
    assert sent.content() == trace.content
    assert sent.kind == "trace"
