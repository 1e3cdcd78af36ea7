"""Claims under a fleet: 50 runners on a real server, paced as runners are, then bursting, then idle.

Three phases, each against the same ``perftrack serve`` process, all runners registered through
the API with a token of their own:

1. **Paced** (the target): the queue holds ``jobs`` nightly jobs; each runner starts at a random
   moment within one job time, claims, "runs" its job for ``job_s`` ± 50 % (a sleep: a real GPU job
   takes minutes, so this is far more claims than a real fleet makes), and claims again, until the
   queue is empty. Latency of every claim that got a job. Idle claims long-poll, as the agent does.
2. **Burst** (no target, for comparison with earlier figures): the same with no job time: every
   runner claims back to back.
3. **Idle, then woken**: every runner long-polls an empty queue; the server's CPU and the claims it
   answers are counted over ``idle_s`` seconds; then jobs are queued one at a time through the API
   (an admin's ``POST /api/v1/jobs``, which may land on either server process) and each one's
   time from queued to claimed is taken.

Every claim's job id is kept: no job may be handed out twice in any phase.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import secrets
import statistics
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.scale.generate import ScaleConfig, commit_in
from benchmarks.scale.shape import case_shapes
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason
from tracker.queue.jobs import enqueue_job
from tracker.vcs.commits import ensure_candidate, upsert_commit

LONG_POLL_S = 20.0


@dataclass
class ClaimFigures:
    """What the three phases measured."""

    paced_ms: list[float] = field(default_factory=list)
    paced_elapsed_s: float = 0.0
    paced_answers: int = 0
    burst_ms: list[float] = field(default_factory=list)
    burst_elapsed_s: float = 0.0
    burst_answers: int = 0
    idle_answers: int = 0
    idle_jobs: int = 0  # jobs a waiting runner got during the idle window (the scheduler's, if any)
    idle_cpu_s: float = 0.0
    idle_s: float = 0.0
    wake_ms: list[float] = field(default_factory=list)
    claimed: list[int] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        """Jobs handed out more than once, over all phases."""
        return len(self.claimed) - len(set(self.claimed))


@dataclass(frozen=True)
class Fleet:
    """The runners: name, hardware kind and token header each."""

    base: str
    runners: list[tuple[str, str, dict[str, str]]]
    admin: dict[str, str]


def queue_jobs(url: str, config: ScaleConfig, jobs: int, night: int) -> int:
    """Queue ``jobs`` nightly jobs on new commits from ``night`` on, in-process; the next free night."""
    engine = db.make_engine(url)
    shapes = case_shapes(config.cases)
    queued = 0
    with db.session_scope(db.make_session_factory(engine)) as session:
        kinds = [get_hardware_kind(session=session, name=name) for name in config.hardware_names]
        while queued < jobs:
            for shape in shapes:
                case = get_current_case(session=session, slug=shape.slug)
                assert case.repository is not None
                commit = upsert_commit(session=session, repository=case.repository, commit=commit_in(night))
                candidate = ensure_candidate(session=session, base=commit, patches=[])
                for kind in kinds:
                    if queued < jobs:
                        enqueue_job(
                            session=session,
                            candidate=candidate,
                            case=case,
                            hardware=kind,
                            reason=JobReason.NIGHTLY,
                        )
                        queued += 1
            night += 1
    engine.dispose()
    return night


def register_fleet(
    base: str, tokens: list[str], admin: str, hardware: list[str], *, prefix: str = "bench-poller"
) -> Fleet:
    """Register one runner per token (named ``prefix-NN``), spread over the hardware kinds."""
    runners = [
        (f"{prefix}-{index:02d}", hardware[index % len(hardware)], {"Authorization": f"Bearer {token}"})
        for index, token in enumerate(tokens)
    ]
    with httpx.Client(base_url=base, timeout=60) as client:
        for name, kind, headers in runners:
            body = {"name": name, "hardware": kind, "gpu_count": 8, "version": "bench"}
            client.post("/api/v1/runners", json=body, headers=headers).raise_for_status()
    return Fleet(base=base, runners=runners, admin={"Authorization": f"Bearer {admin}"})


@dataclass
class _Share:
    """What one client process's runners saw: latencies of claims that got a job, job ids, answers."""

    latencies_ms: list[float] = field(default_factory=list)
    claimed: list[int] = field(default_factory=list)
    answers: int = 0
    elapsed_s: float = 0.0  # from the first runner's start to the last one's end


def run_queue_down(
    fleet: Fleet, job_s: float, figures: ClaimFigures, into: list[float], *, processes: int = 1
) -> tuple[float, int]:
    """Every runner claims (and "runs" each job ``job_s`` ± 50 %) until the queue is empty.

    The runners may be spread over ``processes`` client processes (threads within each), in case
    50 runner threads queueing on one interpreter's lock count as the server's time; on the 2-core
    host five processes cost more CPU than the lock did (p95 419 ms against 261 ms). Latencies of claims that got a job go to ``into``; returns (elapsed s, claims
    answered).
    """
    groups = [fleet.runners[index::processes] for index in range(processes)]
    if processes == 1:
        shares = [_run_share(fleet.base, groups[0], job_s)]
    else:
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            shares = list(pool.map(_run_share, [fleet.base] * processes, groups, [job_s] * processes))
    for share in shares:
        into.extend(share.latencies_ms)
        figures.claimed.extend(share.claimed)
    return max(share.elapsed_s for share in shares), sum(share.answers for share in shares)


def _run_share(base: str, runners: list[tuple[str, str, dict[str, str]]], job_s: float) -> _Share:
    """One client process: a thread per runner, each claiming until the queue is empty.

    Each runner's HTTP client is made before any runner starts, as an agent makes its one client
    when it starts: an ``httpx.Client`` costs ~19 ms of CPU here (its TLS context), and 50 made
    within the first job time, beside the first claims, were most of the paced p95 (see
    docs/scale.md).
    """
    share = _Share()
    lock = threading.Lock()
    clients = [
        httpx.Client(base_url=base, headers=headers, timeout=LONG_POLL_S + 60) for _, _, headers in runners
    ]

    def work(name: str, client: httpx.Client) -> None:
        rng = random.Random(name)  # noqa: S311 - job times
        # Runners are not in step: each starts somewhere within its first job's time.
        time.sleep(rng.uniform(0, job_s))
        with client:
            while True:
                started = time.perf_counter()
                # An empty queue: a short long-poll ends this runner's part once nothing is left.
                response = client.post(f"/api/v1/runners/{name}/claim", params={"wait": 1.0})
                elapsed = (time.perf_counter() - started) * 1000
                _check(response)
                with lock:
                    share.answers += 1
                    if response.status_code == 200:
                        share.latencies_ms.append(elapsed)
                        share.claimed.append(int(response.json()["job_id"]))
                if response.status_code == 204:
                    return
                if job_s > 0:
                    time.sleep(job_s * rng.uniform(0.5, 1.5))

    started = time.perf_counter()
    with ThreadPoolExecutor(len(runners)) as pool:
        list(pool.map(work, [name for name, _, _ in runners], clients))
    share.elapsed_s = time.perf_counter() - started
    return share


def idle_then_wake(
    fleet: Fleet, case: str, server_pid: int, idle_s: float, wakes: int, figures: ClaimFigures
) -> None:
    """Every runner long-polls an empty queue; count the server's CPU, then queue jobs one by one.

    A wake's time runs from sending the enqueue request to the claim's answer arriving.
    """
    lock = threading.Lock()
    done = threading.Event()
    claimed_at: dict[int, float] = {}
    answers = {"all": 0, "jobs": 0}

    def wait_for_work(name: str, headers: dict[str, str]) -> None:
        with httpx.Client(base_url=fleet.base, headers=headers, timeout=LONG_POLL_S + 60) as client:
            while not done.is_set():
                response = client.post(f"/api/v1/runners/{name}/claim", params={"wait": LONG_POLL_S})
                _check(response)
                now = time.perf_counter()
                with lock:
                    answers["all"] += 1
                    answers["jobs"] += response.status_code == 200
                    if response.status_code == 200:
                        job_id = int(response.json()["job_id"])
                        claimed_at[job_id] = now
                        figures.claimed.append(job_id)

    pool = ThreadPoolExecutor(len(fleet.runners))
    futures = [pool.submit(wait_for_work, name, headers) for name, _, headers in fleet.runners]
    time.sleep(2.0)  # every runner is waiting now
    with lock:
        before = dict(answers)
    cpu_before = server_cpu_s(server_pid)
    time.sleep(idle_s)
    figures.idle_cpu_s = server_cpu_s(server_pid) - cpu_before
    figures.idle_s = idle_s
    with lock:
        figures.idle_answers = answers["all"] - before["all"]
        figures.idle_jobs = answers["jobs"] - before["jobs"]
    with httpx.Client(base_url=fleet.base, headers=fleet.admin, timeout=60) as client:
        for index in range(wakes):
            kind = fleet.runners[index % len(fleet.runners)][1]
            body = {"case": case, "hardware": kind, "commit": {"sha": secrets.token_hex(20)}}
            queued = time.perf_counter()
            answer = client.post("/api/v1/jobs", json=body)
            answer.raise_for_status()
            job_id = int(answer.json()["job"]["id"])
            while job_id not in claimed_at and time.perf_counter() - queued < 30:
                time.sleep(0.002)
            if job_id in claimed_at:
                figures.wake_ms.append((claimed_at[job_id] - queued) * 1000)
            time.sleep(0.1)
    done.set()
    pool.shutdown(wait=False, cancel_futures=True)
    for future in futures:
        future.result(timeout=LONG_POLL_S + 90)


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live children (uvicorn's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        own, parent = int(stat.parent.name), int(fields[1])
        if own == pid or parent == pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def summary(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of ``samples`` in ms; zeros when there are none."""
    if not samples:
        return 0.0, 0.0
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1)]


def _check(response: httpx.Response) -> None:
    if response.status_code not in (200, 204):
        raise RuntimeError(f"claim: {response.status_code} {response.text[:300]}")
