"""``python -m benchmarks.scale``: generate a year of history, measure it, print the table.

Each backend is generated from empty (SQLite: a new file; PostgreSQL: the schema of the given
database is dropped and recreated), measured through a real ``perftrack serve`` process and
in-process sweeps, and its figures are written as JSON next to the database; the table compares
every backend measured in this call (or read back with ``--table-only``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from benchmarks.scale.claims import (
    ClaimFigures,
    idle_then_wake,
    queue_jobs,
    register_fleet,
    run_queue_down,
    server_cpu_s,
    summary,
)
from benchmarks.scale.generate import START, GenerateReport, ScaleConfig, generate
from benchmarks.scale.measure import (
    Measurements,
    Served,
    count_runs,
    database_size,
    issue_tokens,
    measure_batch_ingest,
    measure_drain,
    measure_ingest,
    measure_pages,
    measure_sweep,
    page_paths,
    serve,
)
from benchmarks.scale.plans import PlanFinding, check_plans
from benchmarks.scale.report import format_plans, format_table
from benchmarks.scale.shape import case_shapes
from tracker import db
from tracker.enums import TokenRole

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/perf_scale"


def reset(url: str) -> None:
    """Empty the database: delete the SQLite file, or drop and recreate PostgreSQL's public schema."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        for item in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            item.unlink(missing_ok=True)
        return
    engine = db.make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def run_backend(
    backend: str, url: str, work: Path, config: ScaleConfig, args: argparse.Namespace
) -> tuple[Measurements, GenerateReport | None, list[PlanFinding]]:
    """Generate (unless told not to) and measure one backend."""
    folder = work / backend
    folder.mkdir(parents=True, exist_ok=True)
    suite_dir = folder / "suites"
    generated = None
    if not args.skip_generate:
        reset(url)
        print(f"[{backend}] generating {config} ...", flush=True)
        generated = generate(url, suite_dir, config)
        print(f"[{backend}] generated: {generated}", flush=True)
    figures = Measurements(backend=backend)
    figures.runs = count_runs(url)
    figures.size_mb, figures.table_mb = database_size(url)
    figures.sweep_s, figures.sweep_series = measure_sweep(url, config)
    print(f"[{backend}] sweep {figures.sweep_s:.2f} s over {figures.sweep_series} series", flush=True)
    paths = page_paths(url, config)
    # Pages: one server process (a second adds ~45 ms to keep-alive requests; see docs/scale.md).
    with serve(url, folder, suite_dir, 1) as server:
        figures.pages = measure_pages(server.base, paths, args.repeats)
        print(f"[{backend}] pages {figures.pages}", flush=True)
    workers = 1 if backend == "sqlite" else args.workers
    importers = issue_tokens(url, args.clients, purpose="import")
    series = config.cases * len(config.hardware_names)
    with serve(url, folder, suite_dir, workers) as server:
        stored, figures.single_ingest_per_s = measure_ingest(
            server.base, importers, config, args.ingest, args.clients, first_night=config.nights
        )
        figures.single_ingest_results = stored
        print(
            f"[{backend}] ingest one by one {stored} results, {figures.single_ingest_per_s:.0f}/s", flush=True
        )
        stored, figures.ingest_per_s = measure_batch_ingest(
            server.base,
            importers,
            config,
            args.batch_ingest,
            args.batch_clients,
            args.batch_size,
            first_night=config.nights + 4 + 2 * (args.ingest // series),
        )
        figures.ingest_results, figures.ingest_batch_size = stored, args.batch_size
        print(f"[{backend}] batch ingest {stored} results, {figures.ingest_per_s:.0f}/s", flush=True)
        measure_fleet(url, server, config, args, figures)
    # The same again with deferred detection: uploads mark their series, one pass evaluates them.
    with serve(url, folder, suite_dir, workers, deferred_detection=True) as server:
        stored, figures.deferred_per_s = measure_ingest(
            server.base,
            importers,
            config,
            args.ingest,
            args.clients,
            first_night=config.nights + 2 + args.ingest // series,
        )
        figures.deferred_results = stored
        print(f"[{backend}] deferred ingest {stored} results, {figures.deferred_per_s:.0f}/s", flush=True)
    figures.drain_s, figures.drain_series = measure_drain(url, config)
    print(
        f"[{backend}] deferred detection: {figures.drain_series} series in {figures.drain_s:.2f} s",
        flush=True,
    )
    findings = check_plans(url, suite_dir, folder, paths, START + dt.timedelta(days=config.nights + 2))
    (folder / "figures.json").write_text(json.dumps(dataclasses.asdict(figures), indent=2))
    (folder / "plans.txt").write_text(format_plans(findings, verbose=True))
    return figures, generated, findings


def measure_fleet(
    url: str, server: Served, config: ScaleConfig, args: argparse.Namespace, figures: Measurements
) -> None:
    """The claim phases (:mod:`benchmarks.scale.claims`) with ``args.runners`` runners."""
    fleet = register_fleet(
        server.base,
        issue_tokens(url, args.runners, purpose="runner"),
        issue_tokens(url, 1, purpose="admin", role=TokenRole.ADMIN)[0],
        list(config.hardware_names),
    )
    claims = ClaimFigures()
    night = queue_jobs(url, config, args.claim_jobs, config.nights + 1000)
    cpu_before = server_cpu_s(server.pid)
    claims.paced_elapsed_s, claims.paced_answers = run_queue_down(
        fleet, args.job_seconds, claims, claims.paced_ms
    )
    paced_cpu_s = server_cpu_s(server.pid) - cpu_before
    night = queue_jobs(url, config, args.claim_jobs, night)
    cpu_before = server_cpu_s(server.pid)
    claims.burst_elapsed_s, claims.burst_answers = run_queue_down(
        fleet, 0.0, claims, claims.burst_ms, processes=args.client_processes
    )
    burst_cpu_s = server_cpu_s(server.pid) - cpu_before
    # Server CPU (both processes) per claim answered: what a claim costs, whatever the queueing.
    figures.claim_cpu_ms = 1000 * paced_cpu_s / max(claims.paced_answers, 1)
    figures.burst_claim_cpu_ms = 1000 * burst_cpu_s / max(claims.burst_answers, 1)
    case = case_shapes(config.cases)[0].slug
    idle_then_wake(fleet, case, server.pid, args.idle_seconds, args.wakes, claims)
    figures.claim_runners, figures.claim_job_s = len(fleet.runners), args.job_seconds
    figures.claim_client_processes = args.client_processes
    figures.claim_p50_ms, figures.claim_p95_ms = summary(claims.paced_ms)
    figures.claims = claims.paced_answers
    figures.claims_per_s = claims.paced_answers / max(claims.paced_elapsed_s, 1e-9)
    figures.claimed_jobs = len(set(claims.claimed))
    figures.duplicate_claims = claims.duplicates
    figures.burst_claim_p50_ms, figures.burst_claim_p95_ms = summary(claims.burst_ms)
    figures.burst_claims_per_s = claims.burst_answers / max(claims.burst_elapsed_s, 1e-9)
    figures.idle_claims_per_s = claims.idle_answers / max(claims.idle_s, 1e-9)
    figures.idle_server_cpu_pct = 100 * claims.idle_cpu_s / max(claims.idle_s, 1e-9)
    figures.idle_jobs_claimed = claims.idle_jobs
    figures.wake_p50_ms, figures.wake_p95_ms = summary(claims.wake_ms)
    figures.wake_jobs = len(claims.wake_ms)
    print(
        f"[{figures.backend}] claims p50 {figures.claim_p50_ms:.0f} ms p95 {figures.claim_p95_ms:.0f} ms "
        f"(burst {figures.burst_claim_p50_ms:.0f} / {figures.burst_claim_p95_ms:.0f}); idle "
        f"{figures.idle_claims_per_s:.1f} claims/s, {figures.idle_server_cpu_pct:.1f} % CPU, {figures.idle_jobs_claimed} jobs; wake p50 "
        f"{figures.wake_p50_ms:.0f} ms p95 {figures.wake_p95_ms:.0f} ms; {figures.duplicate_claims} twice",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scale", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pg-url", default=DEFAULT_PG, help="PostgreSQL database (its schema is recreated)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "perftrack-scale",
        help="SQLite file, logs, JSON",
    )
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--hardware", type=int, default=4, choices=(1, 2, 3, 4))
    parser.add_argument("--comparisons", type=int, default=40, help="PR comparisons with results")
    parser.add_argument("--ingest", type=int, default=480, help="results POSTed in the ingest test")
    parser.add_argument("--clients", type=int, default=8, help="concurrent ingest clients")
    parser.add_argument(
        "--batch-ingest", type=int, default=4800, help="results POSTed through /results/batch"
    )
    parser.add_argument("--batch-size", type=int, default=200, help="results per batch request")
    parser.add_argument("--batch-clients", type=int, default=4, help="concurrent batch clients")
    parser.add_argument("--claim-jobs", type=int, default=500, help="jobs queued for the claim test")
    parser.add_argument("--runners", type=int, default=50, help="runners in the claim test")
    parser.add_argument(
        "--job-seconds", type=float, default=1.0, help="a paced runner's time per job (± 50 %%)"
    )
    parser.add_argument(
        "--client-processes", type=int, default=1, help="processes the claim test's runners are spread over"
    )
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="idle long-polling window")
    parser.add_argument("--wakes", type=int, default=40, help="jobs queued one by one to waiting runners")
    parser.add_argument("--repeats", type=int, default=40, help="timed requests per page")
    parser.add_argument("--workers", type=int, default=2, help="server processes on PostgreSQL")
    parser.add_argument("--skip-generate", action="store_true", help="measure the database as it is")
    parser.add_argument("--table-only", action="store_true", help="print the table from saved JSON")
    args = parser.parse_args()
    config = ScaleConfig(
        nights=args.nights, cases=args.cases, hardware=args.hardware, comparisons=args.comparisons
    )
    backends = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    urls = {"sqlite": f"sqlite:///{args.work / 'scale.db'}", "postgresql": args.pg_url}
    args.work.mkdir(parents=True, exist_ok=True)
    results: list[Measurements] = []
    generation: dict[str, GenerateReport] = {}
    all_findings: dict[str, list[PlanFinding]] = {}
    started = time.perf_counter()
    for backend in backends:
        if args.table_only:
            saved = json.loads((args.work / backend / "figures.json").read_text())
            saved["pages"] = {key: tuple(value) for key, value in saved["pages"].items()}
            results.append(Measurements(**saved))
            continue
        figures, generated, findings = run_backend(backend, urls[backend], args.work, config, args)
        results.append(figures)
        all_findings[backend] = findings
        if generated is not None:
            generation[backend] = generated
    print()
    print(format_table(results, generation, config))
    for backend, findings in all_findings.items():
        print()
        print(f"Query plans ({backend}): {len(findings)} distinct SELECTs; full scans of big tables:")
        print(format_plans(findings, verbose=False))
    if not args.table_only:
        print(f"\n(total {time.perf_counter() - started:.0f} s; plans in full: {args.work}/<db>/plans.txt)")


if __name__ == "__main__":
    main()
