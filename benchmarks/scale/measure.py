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
import threading
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
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.models import JobReason, Run, TokenRole
from tracker.queue.jobs import enqueue_job
from tracker.series.pending import pending_count
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows.reactions import evaluate_pending_series
from tracker.workflows.sweep import sweep


@dataclass
class Measurements:
    """One backend's figures."""

    backend: str
    runs: int = 0
    ingest_results: int = 0
    ingest_per_s: float = 0.0
    deferred_results: int = 0
    deferred_per_s: float = 0.0
    drain_s: float = 0.0
    drain_series: int = 0
    claim_p50_ms: float = 0.0
    claim_p95_ms: float = 0.0
    claims: int = 0
    claims_per_s: float = 0.0
    claimed_jobs: int = 0
    duplicate_claims: int = 0
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


@contextlib.contextmanager
def serve(
    url: str, data_dir: Path, suite_dir: Path, workers: int, *, deferred_detection: bool = False
) -> Iterator[str]:
    """Run ``perftrack serve`` on a free port against ``url``; yields its base URL."""
    port = _free_port()
    env = {
        **os.environ,
        "PERFTRACK_DETECTION_DEFERRED": "true" if deferred_detection else "false",
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
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def issue_runner_tokens(url: str, count: int) -> list[str]:
    """``count`` runner tokens, one per benchmark client, as every real runner has its own.

    (Clients sharing one token would all update its ``last_used_at`` row and queue on its lock.)
    """
    engine = db.make_engine(url)
    stamp = f"{time.time_ns():x}"
    with db.session_scope(db.make_session_factory(engine)) as session:
        secrets_ = [
            create_token(session=session, name=f"bench-{stamp}-{index}", role=TokenRole.RUNNER).secret
            for index in range(count)
        ]
    engine.dispose()
    return secrets_


def measure_ingest(
    base: str, tokens: list[str], config: ScaleConfig, results: int, clients: int, *, first_night: int
) -> tuple[int, float]:
    """POST ``results`` new imported results (nights from ``first_night`` on) from ``clients`` threads;
    returns (stored, results/s)."""
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
                    exclude={"attempt", "build", "output_digest", "request_latencies_ms", "commit"},
                )
                payload.update(case=shape.slug, hardware=hardware, commit=commit)
                payload["idempotency_key"] = f"scale-import:{night}:{shape.slug}:{hardware}"
                bodies.append(payload)
        night += 1
    bodies = bodies[:results]
    stored = 0
    lock = threading.Lock()

    def post(chunk: list[dict[str, Any]], token: str) -> None:
        nonlocal stored
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            for body in chunk:
                response = client.post("/api/v1/results", json=body)
                if response.status_code not in (200, 201):
                    raise RuntimeError(f"ingest: {response.status_code} {response.text[:300]}")
                with lock:
                    stored += response.status_code == 201

    # Concurrent first uploads of one new commit share its row (tracker.vcs.commits), so no ordering is needed.
    chunks = [bodies[index::clients] for index in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(post, chunks, [tokens[index % len(tokens)] for index in range(clients)]))
    elapsed = time.perf_counter() - started
    return stored, len(bodies) / elapsed


def measure_claims(
    url: str, base: str, tokens: list[str], config: ScaleConfig, jobs: int, runners: int
) -> tuple[list[float], int, int, float]:
    """Queue ``jobs`` nightly jobs, then let ``runners`` threads poll claims until the queue is empty.

    Returns every claim's latency (ms), the jobs claimed, how many were handed out twice and the
    claims answered per second (204s included).
    """
    engine = db.make_engine(url)
    shapes = case_shapes(config.cases)
    with db.session_scope(db.make_session_factory(engine)) as session:
        kinds = {name: get_hardware_kind(session=session, name=name) for name in config.hardware_names}
        queued = 0
        night = config.nights + 1000
        while queued < jobs:
            for shape in shapes:
                case = get_current_case(session=session, slug=shape.slug)
                assert case.repository is not None
                commit = upsert_commit(session=session, repository=case.repository, commit=commit_in(night))
                candidate = ensure_candidate(session=session, base=commit, patches=[])
                for kind in kinds.values():
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
    names = [
        (
            f"bench-poller-{index:02d}",
            config.hardware_names[index % len(config.hardware_names)],
            {"Authorization": f"Bearer {tokens[index % len(tokens)]}"},
        )
        for index in range(runners)
    ]
    with httpx.Client(base_url=base, timeout=60) as client:
        for name, hardware, headers in names:
            response = client.post(
                "/api/v1/runners",
                json={"name": name, "hardware": hardware, "gpu_count": 8, "version": "bench"},
                headers=headers,
            )
            response.raise_for_status()
    latencies: list[float] = []
    claimed: list[int] = []
    lock = threading.Lock()

    def poll(name: str, headers: dict[str, str]) -> None:
        empty = 0
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            while empty < 3:
                started = time.perf_counter()
                response = client.post(f"/api/v1/runners/{name}/claim")
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code not in (200, 204):
                    raise RuntimeError(f"claim: {response.status_code} {response.text[:300]}")
                with lock:
                    latencies.append(elapsed)
                    if response.status_code == 200:
                        claimed.append(int(response.json()["job_id"]))
                if response.status_code == 204:
                    empty += 1
                    time.sleep(0.2)

    started = time.perf_counter()
    with ThreadPoolExecutor(runners) as pool:
        list(pool.map(poll, [name for name, _, _ in names], [headers for _, _, headers in names]))
    elapsed = time.perf_counter() - started
    return latencies, len(set(claimed)), len(claimed) - len(set(claimed)), len(latencies) / elapsed


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
