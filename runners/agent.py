"""The runner agent: lease a job, build the candidate, run the case, upload the result.

A benchmark that crashes, hangs or prints nothing becomes a failed run with its reason and log;
the agent itself keeps going. Results the tracker cannot take right now wait in a spool under the
workdir and are retried with backoff, so a tracker restart mid-upload loses nothing, and the
tracker's per-attempt idempotency stores nothing twice. On a stop request (SIGTERM) the running
benchmark is stopped and the job handed back to the queue.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runners.candidates import BuiltCandidate, CandidateBuilder, CandidateBuildError
from runners.client import LeaseLost, TrackerClient, TrackerError, TrackerUnavailable
from runners.drain import drain_spool
from runners.gitmeta import commit_info
from runners.jobspec import JobSpec
from runners.parsing import ParsedRun, ParseError, RunStatus, parse_run
from runners.parsing.served import summarize_served
from runners.payload import CommitInfo, as_body, job_result
from runners.spool import Spool
from runners.workloads.base import Workload, WorkloadContext, WorkloadResult
from runners.workloads.preload import PreloadLauncher
from runners.workloads.quiet import QuietWait, wait_for_quiet
from wire import validation_message

logger = logging.getLogger("perftrack.runner")
AGENT_VERSION = "0.1.0"
# An evidence job re-runs a culprit with a profiler on: this many steady denoising steps are traced.
EVIDENCE_REASON = "evidence"
EVIDENCE_PROFILED_STEPS = 3


@dataclass(frozen=True)
class AgentConfig:
    """How this agent identifies itself and where it works."""

    name: str
    hardware: str
    gpus: int
    workdir: Path
    labels: dict[str, str] = field(default_factory=dict)
    poll_interval_s: float = 10.0
    # An idle claim waits this long on the tracker for a job (long-poll; 0: ask, then sleep the
    # poll interval). The wait counts towards the poll interval, so an older tracker that answers at
    # once is still asked only every poll interval.
    claim_wait_s: float = 0.0
    max_log_bytes: int = 8 * 1024 * 1024
    # CPU runners: before a benchmark starts, wait up to this long for other processes to leave
    # the CPUs (0: start at once; GPU hosts share their CPUs between runners by design).
    quiet_wait_s: float = 0.0
    # CPU runners: modules a preloaded interpreter imports once; `python -m` benchmarks are then
    # forked from it instead of importing them again (empty: off; see runners.workloads.preload).
    preload_modules: tuple[str, ...] = ()


@dataclass
class JobEvents:
    """Callbacks for progress display; every one is optional."""

    on_job: Callable[[JobSpec], None] | None = None
    on_phase: Callable[[JobSpec, str], None] | None = None
    on_output: Callable[[str], None] | None = None
    on_done: Callable[[JobSpec, dict[str, Any]], None] | None = None


class Agent:
    """One runner: polls the tracker and runs one job at a time."""

    def __init__(
        self,
        config: AgentConfig,
        client: TrackerClient,
        builder: CandidateBuilder,
        workloads: Mapping[str, Workload],
        events: JobEvents | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.builder = builder
        self.workloads = dict(workloads)
        self.events = events or JobEvents()
        self.spool = Spool(config.workdir / "spool")
        self._pgid_file = config.workdir / "benchmark.pgid"
        self._stop = threading.Event()
        self._cancel = threading.Event()  # stops the running benchmark
        # Started lazily by the first benchmark that can use it; ended by close().
        self._launcher = PreloadLauncher(config.preload_modules) if config.preload_modules else None

    def request_stop(self) -> None:
        """Stop after handing back the running job (SIGTERM)."""
        self._stop.set()
        self._cancel.set()

    def close(self) -> None:
        """End the preloaded interpreter, if one runs (call when the agent is done)."""
        if self._launcher is not None:
            self._launcher.close()

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested."""
        return self._stop.is_set()

    def reap_orphans(self) -> int | None:
        """Kill the benchmark a previous, crashed incarnation of this agent left running.

        A benchmark runs in its own process group so that stopping it reaches every worker; the
        flip side is that it survives an agent killed with SIGKILL and would hold the GPUs. Its
        group id is written down while it runs, so the next start can end it.
        """
        try:
            pgid = int(self._pgid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        self._pgid_file.unlink(missing_ok=True)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return None
        logger.warning("killed process group %s left running by a previous agent", pgid)
        return pgid

    def _benchmark_started(self, pgid: int) -> None:
        self._pgid_file.write_text(f"{pgid}\n")

    def register(self) -> None:
        """Tell the tracker who this runner is and what it can run."""
        self.client.register(
            name=self.config.name,
            hardware=self.config.hardware,
            gpu_count=self.config.gpus,
            labels=self.config.labels,
            version=AGENT_VERSION,
            host=platform.node(),
        )

    def _register_when_reachable(self) -> bool:
        """Register, waiting out a tracker (or database) that is down; false if stopped meanwhile.

        A runner started during an outage must not exit: it is the tracker that is away.
        """
        while not self._stop.is_set():
            try:
                self.register()
            except TrackerUnavailable as error:
                logger.warning("cannot register yet, the tracker is unavailable: %s", error)
                self._stop.wait(self.config.poll_interval_s)
                continue
            return True
        return False

    def run(self, *, once: bool = False, idle_exit: Callable[[], bool] | None = None) -> int:
        """Poll and run jobs until stopped; ``once``: until the queue is empty (after one pass)."""
        self.reap_orphans()
        if not self._register_when_reachable():
            return 0
        while not self._stop.is_set():
            self.flush_spool()
            asked = time.monotonic()
            try:
                job = self.client.claim(self.config.name, wait_s=0.0 if once else self.config.claim_wait_s)
            except TrackerUnavailable as error:
                logger.warning("tracker unavailable: %s", error)
                job = None
            if job is None:
                if once or (idle_exit is not None and idle_exit()):
                    break
                self._stop.wait(max(0.0, self.config.poll_interval_s - (time.monotonic() - asked)))
                continue
            if self._stop.is_set():  # stopped while the claim waited: hand the job straight back
                self._release(job, "runner stopped (SIGTERM) before the benchmark started")
                break
            self.run_job(job)
        self.flush_spool()
        return 0 if not self.spool.pending() else 1

    def run_job(self, job: JobSpec) -> None:
        """Build, run and upload one leased job; hand it back if a stop comes in meanwhile."""
        self._cancel.clear()
        if self.events.on_job:
            self.events.on_job(job)
        lease_lost = threading.Event()
        finished = threading.Event()
        beat = threading.Thread(
            target=self._heartbeat,
            args=(job, lease_lost, finished),
            daemon=True,
            name=f"heartbeat-{job.job_id}",
        )
        beat.start()
        try:
            payload = self._execute(job)
        finally:
            finished.set()
            beat.join(timeout=30)
        if self._stop.is_set():
            self._release(job, "runner stopped (SIGTERM) before the benchmark finished")
            return
        if lease_lost.is_set():
            logger.warning(
                "job %s attempt %s lost its lease; its result is kept in the spool", job.job_id, job.attempt
            )
        self._phase(job, "uploading")
        self._upload(job, payload)
        if self.events.on_done:
            self.events.on_done(job, payload)

    def _execute(self, job: JobSpec) -> dict[str, Any]:
        job_dir = self.config.workdir / "jobs" / f"{job.job_id}-{job.attempt}"
        shutil.rmtree(job_dir, ignore_errors=True)
        job_dir.mkdir(parents=True)
        try:
            self._phase(job, "building")
            began = time.monotonic()
            with self.builder.build(job.repository, job.candidate) as built:
                built_at = time.monotonic()
                waited = self._wait_for_quiet(job)
                self._phase(job, "running")
                ran_from = time.monotonic()
                result = self._run_workload(job, built, job_dir)
                # Where the job's time went on this side (the process's own phases are the workload's).
                result.environment.setdefault("timings", {}).update(
                    build_s=round(built_at - began, 3),
                    quiet_wait_s=round(ran_from - built_at, 3),
                    workload_s=round(time.monotonic() - ran_from, 3),
                )
                if waited is not None:
                    conditions = result.environment.setdefault("conditions", {})
                    conditions["quiet_wait"] = {
                        "waited_s": round(waited.waited_s, 2),
                        "busy_cores": None if waited.busy_cores is None else round(waited.busy_cores, 3),
                        "quiet": waited.quiet,
                    }
                commit = commit_info(built.path, job.candidate.base_sha, env=self.builder.base_env)
            return self._payload(job, result, built, commit)
        except CandidateBuildError as error:
            return self._failure(job, f"candidate build failed: {error}", log=str(error))
        except Exception as error:  # the agent survives anything one job does
            logger.exception("job %s failed inside the agent", job.job_id)
            return self._failure(job, f"runner error: {error.__class__.__name__}: {error}", log=str(error))
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)

    def _wait_for_quiet(self, job: JobSpec) -> QuietWait | None:
        """On a CPU runner, let a busy stretch of other processes pass before the benchmark starts."""
        if self.config.quiet_wait_s <= 0 or self.config.hardware != "cpu":
            return None
        self._phase(job, "waiting for a quiet machine")
        waited = wait_for_quiet(self.config.quiet_wait_s, stop=self._stop.is_set)
        if not waited.quiet:
            logger.info(
                "job %s starts after %.0f s although %.2f cores are still busy",
                job.job_id,
                waited.waited_s,
                waited.busy_cores or 0.0,
            )
        return waited

    def _run_workload(self, job: JobSpec, built: BuiltCandidate, job_dir: Path) -> WorkloadResult:
        workload = self.workloads.get(job.case.workload)
        if workload is None:
            known = ", ".join(sorted(self.workloads)) or "none"
            return WorkloadResult(
                command="",
                log_text="",
                failure=f"this runner has no {job.case.workload!r} workload (has: {known})",
            )
        context = WorkloadContext(
            tree=built.path,
            job_dir=job_dir,
            gpu_ids=tuple(range(min(job.case.num_gpus, self.config.gpus)))
            if self.config.hardware != "cpu"
            else (),
            candidate_sha=built.head_sha,
            timeout_s=float(job.case.timeout_s),
            max_log_bytes=self.config.max_log_bytes,
            on_output=self.events.on_output,
            cancel=self._cancel,
            on_start=self._benchmark_started,
            launcher=self._launcher,
            profile_steps=EVIDENCE_PROFILED_STEPS if job.reason == EVIDENCE_REASON else 0,
        )
        try:
            return workload.run(job.case, context)
        finally:
            self._pgid_file.unlink(missing_ok=True)

    def _payload(
        self, job: JobSpec, result: WorkloadResult, built: BuiltCandidate, commit: CommitInfo | None
    ) -> dict[str, Any]:
        parsed = self._parse(job, result)
        try:
            upload = job_result(parsed, attempt=job.attempt, workload=result, built=built, commit=commit)
        except ValidationError as error:
            # The tracker would refuse it (422) and the attempt would wait out its lease: a failed
            # run that says why, with its log, is what the tracker can store instead.
            reason = f"the result does not fit the upload format: {validation_message(error)}"
            return self._failure(job, reason, log=result.log_text)
        return as_body(upload)

    def _parse(self, job: JobSpec, result: WorkloadResult) -> ParsedRun:
        """The measurement, or a failure that says what went wrong (never a number from a failed run)."""
        if result.failure:
            return ParsedRun(status=RunStatus.FAILED, failure_reason=result.failure, sources=("log",))
        try:
            if job.case.mode == "serve":
                return summarize_served(result.log_text, result.request_latencies_ms)
            if not result.log_text.strip() and not result.perf_dump_text:
                return ParsedRun(status=RunStatus.FAILED, failure_reason="the benchmark printed nothing")
            return parse_run(result.log_text or None, result.perf_dump_text)
        except ParseError as error:
            return ParsedRun(status=RunStatus.FAILED, failure_reason=f"unreadable output: {error}")

    def _failure(self, job: JobSpec, reason: str, log: str) -> dict[str, Any]:
        failed = ParsedRun(status=RunStatus.FAILED, failure_reason=reason)
        return as_body(job_result(failed, attempt=job.attempt, raw_log=log))

    def _heartbeat(self, job: JobSpec, lease_lost: threading.Event, finished: threading.Event) -> None:
        interval = max(1.0, job.lease_seconds / 3)
        while not finished.wait(interval):
            try:
                self.client.heartbeat(runner=self.config.name, job_id=job.job_id, attempt=job.attempt)
            except LeaseLost:
                # Someone else may run the job now; finishing ours is wasted work.
                lease_lost.set()
                self._cancel.set()
                return
            except TrackerError as error:
                logger.warning("heartbeat for job %s failed: %s", job.job_id, error)

    def _upload(self, job: JobSpec, payload: dict[str, Any]) -> None:
        path = self.spool.put(job_id=job.job_id, runner=self.config.name, payload=payload)
        logger.info("job %s attempt %s spooled at %s", job.job_id, job.attempt, path)
        self.flush_spool()

    def flush_spool(self) -> None:
        """Upload what waits in the spool, in batches; keep what the tracker cannot take yet."""
        drain_spool(self.spool, self.client)

    def _release(self, job: JobSpec, reason: str) -> None:
        try:
            self.client.release(
                runner=self.config.name, job_id=job.job_id, attempt=job.attempt, reason=reason
            )
        except TrackerError as error:
            logger.warning("could not release job %s (its lease will expire): %s", job.job_id, error)

    def _phase(self, job: JobSpec, phase: str) -> None:
        if self.events.on_phase:
            self.events.on_phase(job, phase)
