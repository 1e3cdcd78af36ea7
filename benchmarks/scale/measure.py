"""Measure a generated database through a real ``perftrack serve`` process and in-process sweeps."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from benchmarks.scale.generate import START, ScaleConfig, commit_in, nightly_payload
from benchmarks.scale.shape import case_shapes, series_shape
from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.models import Run
from tracker.series.pending import pending_count
from tracker.workflows.reactions import evaluate_pending_series
from tracker.workflows.sweep import sweep


@dataclass
class Measurements:
    """One backend's figures."""

    backend: str
    runs: int = 0
    ingest_results: int = 0  # through POST /results/batch
    ingest_per_s: float = 0.0
    ingest_batch_size: int = 0
    single_ingest_results: int = 0  # one POST /results per result, inline detection
    single_ingest_per_s: float = 0.0
    deferred_results: int = 0
    deferred_per_s: float = 0.0
    drain_s: float = 0.0
    drain_series: int = 0
    claim_p50_ms: float = 0.0  # paced runners (claim_job_s between claims), claims that got a job
    claim_p95_ms: float = 0.0
    claims: int = 0
    claims_per_s: float = 0.0
    claimed_jobs: int = 0
    duplicate_claims: int = 0  # over every phase
    claim_runners: int = 0
    claim_client_processes: int = 1  # the runners' threads are spread over this many processes
    claim_job_s: float = 0.0
    burst_claim_p50_ms: float = 0.0  # back to back, no job time
    burst_claim_p95_ms: float = 0.0
    burst_claims_per_s: float = 0.0
    claim_cpu_ms: float = 0.0  # server processes' CPU per claim answered, paced
    burst_claim_cpu_ms: float = 0.0  # the same, back to back
    idle_claims_per_s: float = 0.0  # every runner long-polling an empty queue
    idle_server_cpu_pct: float = 0.0  # of one core, server processes together
    idle_jobs_claimed: int = 0  # jobs handed out in the idle window (none queued: should be 0)
    wake_p50_ms: float = 0.0  # job queued (API) to a waiting runner's claim answered
    wake_p95_ms: float = 0.0
    wake_jobs: int = 0
    pages: dict[str, tuple[float, float]] = field(default_factory=dict)
    sweep_s: float = 0.0
    sweep_series: int = 0
    size_mb: float = 0.0
    table_mb: dict[str, float] = field(default_factory=dict)


def percentile(samples: list[float], share: float) -> float:
    """The nearest-rank percentile of ``samples`` (``share`` in 0..1)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running ``perftrack serve``: its base URL and process id."""

    base: str
    pid: int


@contextlib.contextmanager
def serve(
    url: str, data_dir: Path, suite_dir: Path, workers: int, *, deferred_detection: bool = False
) -> Iterator[Served]:
    """Run ``perftrack serve`` on a free port against ``url``; yields its URL and process id."""
    port = _free_port()
    env = {
        **os.environ,
        "PERFTRACK_DETECTION_DEFERRED": "true" if deferred_detection else "false",
        # Series marked by batches and deferred uploads wait for the measured pass (measure_drain),
        # rather than being evaluated by the server beside the ingest it measures.
        "PERFTRACK_HOUSEKEEPING": "false",
        "PERFTRACK_DATABASE_URL": url,
        "PERFTRACK_DATA_DIR": str(data_dir),
        "PERFTRACK_SUITE_DIR": str(suite_dir),
        "PERFTRACK_ENVIRONMENT": "production",
        "PERFTRACK_SESSION_SECRET": secrets.token_urlsafe(48),
    }
    command = [str(Path(sys.executable).with_name("perftrack")), "serve", "--port", str(port)]
    command += ["--workers", str(workers)]
    log = (data_dir / "server.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start; see {data_dir / 'server.log'}")
            time.sleep(0.5)
        yield Served(base=base, pid=process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def issue_tokens(url: str, count: int, *, purpose: str, role: TokenRole = TokenRole.RUNNER) -> list[str]:
    """``count`` tokens, one per benchmark client, as every real runner (or importer) has its own.

    (Clients sharing one token would all update its ``last_used_at`` row and queue on its lock.) A
    runner token that registers a runner is bound to it and may no longer import: ingest clients
    and runners take tokens of their own (``purpose`` names them).
    """
    engine = db.make_engine(url)
    stamp = f"{time.time_ns():x}"
    with db.session_scope(db.make_session_factory(engine)) as session:
        secrets_ = [
            create_token(session=session, name=f"bench-{purpose}-{stamp}-{index}", role=role).secret
            for index in range(count)
        ]
    engine.dispose()
    return secrets_


def ingest_bodies(config: ScaleConfig, results: int, *, first_night: int) -> list[dict[str, Any]]:
    """``results`` new imported results, the next nights' runs of every series from ``first_night`` on."""
    rng = random.Random(99 + first_night)  # noqa: S311 - synthetic timings
    shapes = case_shapes(config.cases)
    bodies: list[dict[str, Any]] = []
    night = first_night
    while len(bodies) < results:
        commit = commit_in(night).model_dump(mode="json")
        for shape in shapes:
            for hardware in config.hardware_names:
                payload = nightly_payload(
                    shape=series_shape(shape, hardware, 0, rng),
                    case=shape,
                    hardware=hardware,
                    night=night,
                    steps=config.steps,
                    measured_at=START + dt.timedelta(days=night),
                    rng=rng,
                ).model_dump(
                    mode="json",
                    exclude={
                        "attempt",
                        "build",
                        "output_digest",
                        "request_latencies_ms",
                        "commit",
                        "files",
                        "output",
                    },
                )
                payload.update(case=shape.slug, hardware=hardware, commit=commit)
                payload["idempotency_key"] = f"scale-import:{night}:{shape.slug}:{hardware}"
                bodies.append(payload)
        night += 1
    return bodies[:results]


def measure_ingest(
    base: str, tokens: list[str], config: ScaleConfig, results: int, clients: int, *, first_night: int
) -> tuple[int, float]:
    """POST ``results`` new imported results one per request from ``clients`` threads; (stored, results/s)."""
    bodies = ingest_bodies(config, results, first_night=first_night)

    def post(client: httpx.Client, chunk: list[dict[str, Any]]) -> int:
        stored = 0
        for body in chunk:
            response = client.post("/api/v1/results", json=body)
            if response.status_code not in (200, 201):
                raise RuntimeError(f"ingest: {response.status_code} {response.text[:300]}")
            stored += response.status_code == 201
        return stored

    stored, elapsed = _post_concurrently(
        base, tokens, [bodies[index::clients] for index in range(clients)], post
    )
    return stored, len(bodies) / elapsed


def measure_batch_ingest(
    base: str,
    tokens: list[str],
    config: ScaleConfig,
    results: int,
    clients: int,
    batch: int,
    *,
    first_night: int,
) -> tuple[int, float]:
    """POST ``results`` new imported results ``batch`` per request (``/results/batch``) from ``clients``
    threads; (stored, results/s)."""
    bodies = ingest_bodies(config, results, first_night=first_night)
    batches = [bodies[start : start + batch] for start in range(0, len(bodies), batch)]

    def post(client: httpx.Client, chunk: list[list[dict[str, Any]]]) -> int:
        stored = 0
        for items in chunk:
            response = client.post("/api/v1/results/batch", json={"results": items})
            if response.status_code != 200:
                raise RuntimeError(f"batch ingest: {response.status_code} {response.text[:300]}")
            outcomes = [item["outcome"] for item in response.json()["items"]]
            if "refused" in outcomes:
                raise RuntimeError(f"batch ingest refused items: {response.text[:500]}")
            stored += outcomes.count("stored")
        return stored

    stored, elapsed = _post_concurrently(
        base, tokens, [batches[index::clients] for index in range(clients)], post
    )
    return stored, len(bodies) / elapsed


def _post_concurrently(base: str, tokens: list[str], chunks: list[Any], post: Any) -> tuple[int, float]:
    """Run ``post(client, chunk)`` for every chunk on its own thread and token; (stored, seconds)."""

    def run(chunk: Any, token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=300) as client:
            return int(post(client, chunk))

    # Concurrent first uploads of one new commit share its row (tracker.vcs.commits), so no ordering is needed.
    started = time.perf_counter()
    with ThreadPoolExecutor(len(chunks)) as pool:
        stored = sum(pool.map(run, chunks, [tokens[index % len(tokens)] for index in range(len(chunks))]))
    return stored, time.perf_counter() - started


def page_paths(url: str, config: ScaleConfig) -> dict[str, str]:
    """The pages (and JSON twins) to time: a real series, one of its runs, overview and alerts."""
    engine = db.make_engine(url)
    slug = case_shapes(config.cases)[0].slug
    hardware = config.hardware_names[0]
    with engine.connect() as connection:
        run_id = connection.execute(
            text("SELECT MAX(id) FROM runs WHERE status = 'ok' AND job_id IS NOT NULL")
        ).scalar_one()
    engine.dispose()
    return {
        "overview /": "/",
        "series page": f"/series/{slug}/{hardware}",
        "series JSON": f"/api/v1/series/{slug}/{hardware}",
        "series chart JSON": f"/api/v1/series/{slug}/{hardware}/chart",
        "run page": f"/runs/{run_id}",
        "run JSON": f"/api/v1/runs/{run_id}",
        "alerts page": "/alerts",
        "alerts JSON": "/api/v1/alerts",
    }


def measure_pages(base: str, paths: dict[str, str], repeats: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 (ms) of ``repeats`` sequential GETs of each path, after one warm-up each."""
    figures: dict[str, tuple[float, float]] = {}
    with httpx.Client(base_url=base, timeout=120) as client:
        for label, path in paths.items():
            client.get(path).raise_for_status()
            samples = []
            for _ in range(repeats):
                started = time.perf_counter()
                client.get(path).raise_for_status()
                samples.append((time.perf_counter() - started) * 1000)
            figures[label] = (statistics.median(samples), percentile(samples, 0.95))
    return figures


def measure_sweep(url: str, config: ScaleConfig) -> tuple[float, int]:
    """Seconds for one detection sweep over every series (as ``perftrack alerts sweep``)."""
    engine = db.make_engine(url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        started = time.perf_counter()
        report = sweep(session=session, now=START + dt.timedelta(days=config.nights + 1))
        elapsed = time.perf_counter() - started
    engine.dispose()
    return elapsed, report.series


def measure_drain(url: str, config: ScaleConfig) -> tuple[float, int]:
    """Seconds for the scheduler's pass over the series deferred uploads marked, and how many."""
    engine = db.make_engine(url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        marked = pending_count(session=session)
        started = time.perf_counter()
        evaluate_pending_series(session=session, now=START + dt.timedelta(days=config.nights + 30))
        elapsed = time.perf_counter() - started
    engine.dispose()
    return elapsed, marked


def database_size(url: str) -> tuple[float, dict[str, float]]:
    """Size of the database in MiB, and of its biggest tables (PostgreSQL: with indexes and TOAST)."""
    engine = db.make_engine(url)
    tables = ("runs", "run_artifacts", "run_stages", "jobs")
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            total = connection.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
            parts = {
                name: connection.execute(text("SELECT pg_total_relation_size(:t)"), {"t": name}).scalar_one()
                for name in tables
            }
        else:
            path = Path(engine.url.database or "")
            total = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
            parts = {}
            with contextlib.suppress(Exception):
                parts = {
                    name: connection.execute(
                        text("SELECT SUM(pgsize) FROM dbstat WHERE name = :t OR tbl_name = :t"), {"t": name}
                    ).scalar_one()
                    or 0
                    for name in tables
                }
    engine.dispose()
    return total / 2**20, {name: value / 2**20 for name, value in parts.items()}


def count_runs(url: str) -> int:
    """Runs stored."""
    engine = db.make_engine(url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        count = session.query(Run).count()
    engine.dispose()
    return count
