"""Real processes for the fault tests: a tracker server (``perftrack serve``), runner agents
(``perftrack runner``) and a misbehaving benchmark, on a database of the backend under test.

Everything here is an OS process the tests can SIGKILL, SIGSTOP or restart; nothing is mocked.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from tests.leases import UNEXPIRING_LEASE_S
from tests.live import free_port
from tests.runners.agent_env import Upstream, make_upstream
from tests.waiting import wait_until
from tracker import db
from tracker.access.tokens import create_token
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import TokenRole

ROOT = Path(__file__).resolve().parent.parent.parent
FAKE_BENCH = Path(__file__).resolve().parent / "fake_bench.py"
# "env" in front: the runner finds no Python behind the executable, so it skips the torch
# version probe (seconds per job on a loaded machine) without changing what runs.
BENCH_COMMAND = f"env {sys.executable} {FAKE_BENCH}"
CASE = "fake-t2i"

SUITE = """
[suite]
name = "faults"

[repository]
name = "upstream"
url = "{url}"

[hardware.cpu]
description = "the runners of the fault tests"

[hardware.ghost]
description = "a kind no runner of the tests serves"

[[cases]]
slug = "fake-t2i"
model = "Qwen/Qwen-Image-2512"
family = "qwen-image"
task = "t2i"
hardware = ["cpu", "ghost"]
timeout_s = 60

[cases.params]
prompt = "a fox"
num-inference-steps = 50
seed = 42
"""


@dataclass
class Tracker:
    """A ``perftrack serve`` process on a fixed port and database, which tests kill and restart."""

    root: Path
    database_url: str
    upstream: Upstream
    lease_seconds: int = UNEXPIRING_LEASE_S
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    runner_token: str = ""
    admin_token: str = ""
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    runner_tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def suite_dir(self) -> Path:
        return self.root / "suites"

    def prepare(self) -> None:
        """Migrate the database, sync the suite and issue a runner and an admin token."""
        self.suite_dir.mkdir(parents=True, exist_ok=True)
        (self.suite_dir / "faults.toml").write_text(SUITE.format(url=self.upstream.path))
        db.upgrade(self.database_url)
        engine = db.make_engine(self.database_url)
        try:
            with db.session_scope(db.make_session_factory(engine)) as session:
                sync_suites(session=session, suites=load_suites(self.suite_dir))
                self.runner_token = create_token(session=session, name="runner", role=TokenRole.RUNNER).secret
                self.admin_token = create_token(session=session, name="admin", role=TokenRole.ADMIN).secret
        finally:
            engine.dispose()

    def token_for(self, runner: str) -> str:
        """A runner token of its own for the runner named ``runner`` (a token acts as one runner)."""
        if runner not in self.runner_tokens:
            engine = db.make_engine(self.database_url)
            try:
                with db.session_scope(db.make_session_factory(engine)) as session:
                    issued = create_token(session=session, name=f"runner-{runner}", role=TokenRole.RUNNER)
                    self.runner_tokens[runner] = issued.secret
            finally:
                engine.dispose()
        return self.runner_tokens[runner]

    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("PERFTRACK_")}
        env.update(
            {
                "PERFTRACK_DATABASE_URL": self.database_url,
                "PERFTRACK_SUITE_DIR": str(self.suite_dir),
                "PERFTRACK_DATA_DIR": str(self.root / "data"),
                "PERFTRACK_LEASE_SECONDS": str(self.lease_seconds),
                "PERFTRACK_ENVIRONMENT": "test",
                # These tests are about faults, not measurement hygiene: the other test worker shares
                # these cores by design, so a CPU run beside it is not contended here, and no re-run
                # job reaches a runner the test set up for another (the hygiene's own tests:
                # tests/tracker/workflows/test_reruns.py).
                "PERFTRACK_FLAG_CPU_CONTENTION": "false",
                "PERFTRACK_FLAGGED_RERUN_BUDGET_S": "0",
                **self.extra_env,
            }
        )
        return env

    def start(self) -> None:
        """Start the server and wait until it answers its health check."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.starts += 1
        log = open(self.root / f"tracker-{self.starts}.log", "wb")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "perftrack.cli", "serve", "--port", str(self.port)],
            env=self.env(),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

        def up() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"the tracker exited with {self.process.returncode}: {self.log_tail()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 60, "the tracker to start")

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """End the server abruptly (SIGKILL: no shutdown, connections just drop)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def log_tail(self, chars: int = 3000) -> str:
        path = self.root / f"tracker-{self.starts}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    # --- the API, as an admin and as an observer --------------------------------------------------

    def enqueue(self, sha: str, *, purpose: str = "", hardware: str = "cpu") -> int:
        response = httpx.post(
            f"{self.url}/api/v1/jobs",
            json={"case": CASE, "hardware": hardware, "commit": {"sha": sha}, "purpose": purpose},
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        job_id: int = response.json()["job"]["id"]
        return job_id

    def job(self, job_id: int) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/api/v1/jobs/{job_id}", timeout=30)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def run(self, run_id: int) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/api/v1/runs/{run_id}", timeout=30).json()
        return data

    def runs_of(self, job_id: int) -> list[dict[str, Any]]:
        """The stored runs of a job, read from the database itself (works while the server is down)."""
        engine = db.make_engine(self.database_url)
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    text(
                        "SELECT runs.id, runs.status, runs.attempt, runners.name AS runner FROM runs"
                        " LEFT JOIN runners ON runners.id = runs.runner_id"
                        " WHERE runs.job_id = :job ORDER BY runs.id"
                    ),
                    {"job": job_id},
                ).mappings()
                return [dict(row) for row in rows]
        finally:
            engine.dispose()


@contextlib.contextmanager
def running_tracker(
    root: Path,
    database_url: str,
    *,
    lease_seconds: int = UNEXPIRING_LEASE_S,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Tracker]:
    """A prepared and started tracker with its own upstream repository; killed afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    upstream = make_upstream(root)
    tracker = Tracker(
        root=root,
        database_url=database_url,
        upstream=upstream,
        lease_seconds=lease_seconds,
        extra_env=extra_env or {},
    )
    tracker.prepare()
    tracker.start()
    try:
        yield tracker
    finally:
        tracker.kill(signal.SIGTERM)


@dataclass
class Runner:
    """A ``perftrack runner`` process with its own workdir."""

    tracker: Tracker
    name: str
    workdir: Path
    bench: str = "ok"
    bench_env: dict[str, str] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)
    once: bool = False
    # Fault runners poll (every 0.3 s) rather than long-poll, so each meets an outage on its next
    # request; claims that wait are tests/faults/test_claims.py's and tests/web/api/test_claims_wait.py's.
    claim_wait: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def started_file(self) -> Path:
        """Where the benchmark writes its pid when it starts."""
        return self.workdir / "bench.started"

    @property
    def pgid_file(self) -> Path:
        return self.workdir / "benchmark.pgid"

    @property
    def spool(self) -> Path:
        return self.workdir / "spool"

    @property
    def log_path(self) -> Path:
        return self.workdir.parent / f"{self.name}-{self.starts}.log"

    def start(self) -> Runner:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        env = {key: value for key, value in os.environ.items() if not key.startswith("PERFTRACK_")}
        env.update(
            {
                "PERFTRACK_TOKEN": self.tracker.token_for(self.name),
                "PERFTRACK_HTTP_TIMEOUT_S": "10",
                "FAULT_BENCH": self.bench,
                "FAULT_BENCH_STARTED": str(self.started_file),
                **self.bench_env,
                **self.extra_env,
            }
        )
        argv = [
            sys.executable,
            "-m",
            "perftrack.cli",
            "runner",
            "--server",
            self.tracker.url,
            "--hardware",
            "cpu",
            "--workdir",
            str(self.workdir),
            "--name",
            self.name,
            "--poll-interval",
            "0.3",
            "--claim-wait",
            str(self.claim_wait),
            "--sglang",
            BENCH_COMMAND,
            "--env-allow",
            "FAULT_*",  # the fake benchmark's switches (builds and benchmarks see an allow-list only)
        ]
        if self.once:
            argv.append("--once")
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def wait(self, timeout_s: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout_s)

    def wait_with_usage(self) -> tuple[int, Any]:
        """Wait for the runner to exit; its exit status and its resource usage (``ru_maxrss``)."""
        assert self.process is not None
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        return self.process.returncode, usage

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM (hand the job back), then SIGKILL if it does not go; also after a SIGSTOP."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def rejected(self) -> list[Path]:
        folder = self.spool / "rejected"
        return sorted(folder.glob("job-*.json")) if folder.is_dir() else []

    def pending(self) -> list[Path]:
        return sorted(self.spool.glob("job-*.json")) if self.spool.is_dir() else []


def kill_group(pgid: int) -> None:
    """Clean up a benchmark group a failed test may have left behind."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
