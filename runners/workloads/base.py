"""The contract between the runner agent and a workload."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runners.jobspec import CaseSpec
from runners.workloads.process import Launcher
from wire.outputs import OutputIn


@dataclass(frozen=True)
class CompileCounters:
    """torch.compile / Dynamo counters of a run, when the workload could count them."""

    graph_breaks: int | None = None
    recompiles: int | None = None
    unique_graphs: int | None = None
    frames_compiled: int | None = None


@dataclass(frozen=True)
class CapturedFile:
    """A file a run made that goes up with its result (a gzipped profiler trace)."""

    name: str
    content: bytes
    media_type: str = "application/gzip"


@dataclass(frozen=True)
class WorkloadResult:
    """What one execution produced. ``failure`` is set when the process itself failed
    (crash, non-zero exit, timeout, could not start); the log is kept either way."""

    command: str
    log_text: str
    perf_dump_text: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    failure: str | None = None
    log_truncated: bool = False
    compile: CompileCounters = CompileCounters()
    environment: dict[str, Any] = field(default_factory=dict)
    request_latencies_ms: tuple[float, ...] = ()
    output: OutputIn | None = None  # what --save-output wrote (generate mode)
    warnings: tuple[str, ...] = ()  # about the run but not its numbers (e.g. an unreadable output)
    files: tuple[CapturedFile, ...] = ()  # uploaded with the result


@dataclass(frozen=True)
class WorkloadContext:
    """Where and how to run: the built tree, a scratch directory, the GPUs to use."""

    tree: Path  # the candidate's worktree (sources at the candidate)
    job_dir: Path  # empty scratch directory for this attempt (perf dump, outputs)
    gpu_ids: tuple[int, ...] = ()
    candidate_sha: str = ""  # exported as SGLANG_GIT_COMMIT
    timeout_s: float = 3600.0
    max_log_bytes: int = 8 * 1024 * 1024
    on_output: Callable[[str], None] | None = None  # each output line, for progress display
    # Set by the agent to stop the benchmark early (runner stopping, lease lost); optional.
    cancel: threading.Event | None = None
    # Told the benchmark's process group id when it starts (to reap it after an agent crash).
    on_start: Callable[[int], None] | None = None
    # Starts the benchmark process (None: a plain subprocess); the agent's preloaded interpreter.
    launcher: Launcher | None = None
    # An evidence job: profile this many steady denoising steps (0: no profiler).
    profile_steps: int = 0


class Workload(Protocol):
    """Runs a case on a built tree and returns what it printed and measured."""

    def run(self, case: CaseSpec, context: WorkloadContext) -> WorkloadResult:
        """Execute ``case``; never raises for a failure of the benchmark itself."""
        ...
