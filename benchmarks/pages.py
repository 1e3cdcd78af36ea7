"""How fast the dashboard answers with a year of data: ``python -m benchmarks.pages``.

Fills a temporary SQLite database through the real ingest path: a nightly series of 365 runs (jobs
enqueued, leased and uploaded as a runner would), a planted +8 % regression in it, and 20 extra
cases × 2 hardware kinds with 30 imported runs each for the overview. Then times, server-side
through FastAPI's TestClient, the overview page, the series page and the chart JSON endpoint, and
prints median and p95 over several requests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason
from tracker.ingest.results import IngestLimits, ingest_job_result, ingest_result
from tracker.queue.claims import claim_job
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate, upsert_commit
from web.app import create_app
from wire import CommitIn, JobResultIn, ResultIn

SUITES = Path(__file__).resolve().parents[1] / "suites"
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
T0 = dt.datetime(2025, 6, 1, 2, 0, tzinfo=dt.UTC)
NIGHTLY_CASE = "bench-case-00"
EXTRA_CASES = 20
EXTRA_RUNS = 30


def bench_suite(cases: int) -> str:
    """A suite file of ``cases`` cases, each on H200 and GB300."""
    head = """[suite]
name = "bench"
description = "page benchmark"

[repository]
name = "sglang"
url = "https://github.com/sgl-project/sglang.git"
default_branch = "main"

[hardware.H200]
description = "NVIDIA H200"

[hardware.GB300]
description = "NVIDIA GB300"

[defaults]
threshold_pct = 2.0
workload = "sglang"
mode = "generate"
timeout_s = 3600
"""
    blocks = [
        f"""
[[cases]]
slug = "bench-case-{index:02d}"
title = "Bench case {index}"
model = "Bench/Model-{index % 5}"
family = "family-{index % 5}"
task = "t2i"
hardware = ["H200", "GB300"]
num_gpus = 1

[cases.params]
prompt = "a fox"
width = 1024
height = 1024
num-inference-steps = 30
seed = {index}
"""
        for index in range(cases)
    ]
    return head + "".join(blocks)


def steps(value: float, rng: random.Random) -> list[float]:
    """30 denoise steps around ``value`` with a slow compile step first."""
    return [value * 1.2] + [value * (1 + rng.gauss(0, 0.004)) for _ in range(29)]


def commit_in(index: int) -> CommitIn:
    return CommitIn(
        sha=f"{index + 0xB0000:07x}" + "e" * 33,
        parents=[f"{index - 1 + 0xB0000:07x}" + "e" * 33] if index else [],
        title=f"Commit {index}: <tidy> & refactor",
        author_name="Bench Author",
        committed_at=T0 + dt.timedelta(days=index),
    )


def fill(settings: Settings, nights: int) -> None:
    """Store the nightly series and the overview's extra series through the ingest functions."""
    engine = db.make_engine(settings.effective_database_url)
    rng = random.Random(365)  # noqa: S311 - synthetic timings, not secrets
    with db.session_scope(db.make_session_factory(engine)) as session:
        case = get_current_case(session=session, slug=NIGHTLY_CASE)
        h200 = get_hardware_kind(session=session, name="H200")
        assert case.repository is not None
        now = T0
        runner = register_runner(
            session=session,
            name="bench-h200",
            hardware=h200,
            gpu_count=8,
            labels={},
            version="bench",
            host="bench",
            token=None,
            now=now,
        )
        for index in range(nights):
            commit = upsert_commit(session=session, repository=case.repository, commit=commit_in(index))
            candidate = ensure_candidate(session=session, base=commit, patches=[])
            enqueue_job(
                session=session, candidate=candidate, case=case, hardware=h200, reason=JobReason.NIGHTLY
            )
            while True:  # the nightly job and any confirmation it triggers
                now += dt.timedelta(minutes=5)
                job = claim_job(session=session, runner=runner, now=now)
                if job is None:
                    break
                position = int(job.candidate.base_commit.sha[:7], 16) - 0xB0000
                level = 100.0 * (1.08 if 200 <= position < 260 else 1.0)
                ingest_job_result(
                    session=session,
                    runner=runner,
                    job_id=job.id,
                    result=JobResultIn(attempt=job.attempts, step_times_ms=steps(level, rng)),
                    limits=LIMITS,
                    now=now,
                )
        for index in range(1, EXTRA_CASES):
            for hardware in ("H200", "GB300"):
                for run in range(EXTRA_RUNS):
                    ingest_result(
                        session=session,
                        result=ResultIn(
                            case=f"bench-case-{index:02d}",
                            hardware=hardware,
                            commit=commit_in(nights - EXTRA_RUNS + run),
                            step_times_ms=steps(50.0 + index, rng),
                            idempotency_key=f"bench-{index}-{hardware}-{run}",
                        ),
                        limits=LIMITS,
                        now=now,
                    )
    engine.dispose()


def timed(client: TestClient, path: str, repeats: int) -> tuple[float, float, int]:
    """Median and p95 in ms of ``repeats`` GETs of ``path`` (after one warm-up), and the body size."""
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text[:500])
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(path)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples), p95, len(response.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nights", type=int, default=365, help="nightly runs in the big series")
    parser.add_argument("--repeats", type=int, default=15, help="timed requests per page")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        suites = root / "suites"
        suites.mkdir()
        (suites / "bench.toml").write_text(bench_suite(EXTRA_CASES))
        settings = Settings(database_url=f"sqlite:///{root / 'bench.db'}", data_dir=root, suite_dir=suites)
        with TestClient(create_app(settings)) as client:
            start = time.perf_counter()
            fill(settings, args.nights)
            print(
                f"filled in {time.perf_counter() - start:.1f} s: {args.nights} nightly runs of {NIGHTLY_CASE} "
                f"on H200, {EXTRA_CASES - 1} cases × 2 hardware × {EXTRA_RUNS} imported runs"
            )
            series = f"/series/{NIGHTLY_CASE}/H200"
            pages = [
                ("overview /", "/"),
                (f"series {series} (500 newest)", series),
                ("series, last 365", f"{series}?limit=365"),
                ("chart JSON, 365 runs", f"/api/v1/series/{NIGHTLY_CASE}/H200/chart?limit=365"),
                (
                    "chart JSON, e2e metric",
                    f"/api/v1/series/{NIGHTLY_CASE}/H200/chart?metric=e2e_ms&limit=365",
                ),
            ]
            print(f"{'request':<48} {'median ms':>10} {'p95 ms':>9} {'bytes':>9}")
            for label, path in pages:
                median, p95, size = timed(client, path, args.repeats)
                print(f"{label:<48} {median:>10.1f} {p95:>9.1f} {size:>9,}")


if __name__ == "__main__":
    main()
