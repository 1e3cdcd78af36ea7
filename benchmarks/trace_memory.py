"""What reading a large evidence trace costs the server: ``python -m benchmarks.trace_memory``.

Builds a trace like the one that once took a server from 320 MiB to 1.1 GiB RSS, parsed three times:
~660 k complete events, ~48 MiB of JSON unpacked, under 2 MB gzipped. Each run stores it through the
upload path (an evidence job claimed, its result uploaded with the trace: ``store_job_result``) in
a fresh SQLite database, then reads it in a fresh process as the server does after an upload, with
readers overlapping (a follow-up and the housekeeper: ``summarize_pending`` at once on threads),
and prints that process's peak RSS over its RSS before the reading, its RSS after, how many
readings parsed the trace (the row's ``read_attempts``) and the seconds. Linux only (the peak is
``/proc/self/status``'s ``VmHWM``, reset before the reading). Figures: docs/guide.md ("Reading a
trace").
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import gzip
import io
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import select

from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind, sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import Arm, JobReason
from tracker.ingest.results import IngestLimits
from tracker.models import EvidenceJob
from tracker.queue.claims import claim_job
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows.evidence_reading import summarize_pending
from tracker.workflows.results import store_job_result
from wire import CommitIn, JobResultIn
from wire.files import FileIn

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "suites"
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
EVENTS = 662_000
BLOCKS_PER_STEP = 2000  # each block: an operator, its child, a kernel on the GPU's stream
T0 = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
SHA = "4" * 40
MIB = 1024 * 1024


@dataclass(frozen=True)
class Reading:
    """One reading of the trace in a fresh process."""

    growth_mib: float  # peak RSS during the reading over the RSS before it
    held_mib: float  # RSS after the reading (and a collection) over the RSS before it
    parses: int  # readings that parsed the trace (the row's read_attempts)
    seconds: float
    steps: int | None  # profiled steps the summary counted
    dropped: int | None  # events past the reader's budget


def build_trace(events: int = EVENTS) -> bytes:
    """A gzipped Chrome trace of about ``events`` complete events (up to 3 fewer): profiled steps
    of nested CPU operators (``aten::mm`` inside ``aten::lin``) with a kernel each, ~80 bytes an
    event."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as packed:
        packed.write(b'{"schemaVersion":1,"traceEvents":[')
        written, step, ts = 0, 0, 1_000_000
        while events - written >= 4:  # a step's annotation and one block at least
            blocks = min(BLOCKS_PER_STEP, (events - written - 1) // 3)
            packed.write(
                b'{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%d,'
                b'"dur":%d},' % (step, ts, blocks * 40)
            )
            packed.write(b"".join(_block(ts + 40 * block) for block in range(blocks)))
            written += 1 + 3 * blocks
            ts += blocks * 40 + 100
            step += 1
        packed.write(b'{"ph":"i","name":"end","pid":1,"tid":1,"ts":%d}]}' % ts)
    return out.getvalue()


def _block(ts: int) -> bytes:
    return (
        b'{"ph":"X","cat":"cpu_op","name":"aten::lin","pid":1,"tid":1,"ts":%d,"dur":30},'
        b'{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":%d,"dur":20},'
        b'{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":%d,"dur":25},' % (ts, ts + 5, ts + 10)
    )


def prepare(db_url: str, trace: bytes) -> int:
    """A migrated database holding one evidence job whose run uploaded ``trace``, not read yet;
    the job's id."""
    db.upgrade(db_url)
    engine = db.make_engine(db_url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
            case = get_current_case(session=session, slug="qwen-image-t2i-1024")
            kind = get_hardware_kind(session=session, name="H200")
            assert case.repository is not None
            commit = upsert_commit(session=session, repository=case.repository, commit=CommitIn(sha=SHA))
            candidate = ensure_candidate(session=session, base=commit, patches=[])
            job = enqueue_job(
                session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.EVIDENCE
            ).job
            session.add(EvidenceJob(job_id=job.id, side=Arm.HEAD))
            runner = register_runner(
                session=session,
                name="bench-h200",
                hardware=kind,
                gpu_count=8,
                labels={},
                version="bench",
                host="bench",
                token=None,
                now=T0,
            )
            claimed = claim_job(session=session, runner=runner, now=T0)
            assert claimed is job
            result = JobResultIn(
                attempt=job.attempts,
                step_times_ms=[300.0] * 5,
                files=[FileIn.of_bytes("profile.trace.json.gz", trace)],
            )
            store_job_result(
                session=session, runner=runner, job_id=job.id, result=result, limits=LIMITS, now=T0
            )
            return job.id
    finally:
        engine.dispose()


def measure(db_url: str, job_id: int, readers: int = 2) -> Reading:
    """Read the pending trace as the server does, ``readers`` passes at once; what it cost."""
    engine = db.make_engine(db_url)
    sessions = db.make_session_factory(engine)
    try:
        with sessions() as session:  # the connection opened before the baseline
            session.scalar(select(EvidenceJob.read_attempts).where(EvidenceJob.job_id == job_id))
        gc.collect()
        before = _status_kib("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here on
        start = time.perf_counter()
        together = threading.Barrier(readers)

        def reader() -> None:
            together.wait()
            summarize_pending(sessions=sessions)

        threads = [threading.Thread(target=reader) for _ in range(readers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
        peak = _status_kib("VmHWM")
        gc.collect()
        after = _status_kib("VmRSS")
        with sessions() as session:
            link = session.get(EvidenceJob, job_id)
            assert link is not None
            summary = link.summary or {}
            return Reading(
                growth_mib=(peak - before) / 1024,
                held_mib=(after - before) / 1024,
                parses=link.read_attempts,
                seconds=seconds,
                steps=summary.get("profiled_steps"),
                dropped=summary.get("trace_events_dropped"),
            )
    finally:
        engine.dispose()


def _status_kib(field: str) -> int:
    """A figure of ``/proc/self/status`` (kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def run_once(trace: bytes, readers: int) -> Reading:
    """Store ``trace`` in a fresh database and read it in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="trace-memory-") as work:
        db_url = f"sqlite:///{work}/trace.db"
        job_id = prepare(db_url, trace)
        command = [sys.executable, "-m", "benchmarks.trace_memory", "--read", db_url, str(job_id)]
        command += ["--readers", str(readers)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        return Reading(**json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="fresh processes to read in (median printed)")
    parser.add_argument("--events", type=int, default=EVENTS, help="complete events in the trace")
    parser.add_argument("--readers", type=int, default=2, help="passes reading at once")
    parser.add_argument("--read", nargs=2, metavar=("DB_URL", "JOB_ID"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read:  # the fresh process: one reading, as JSON
        print(json.dumps(asdict(measure(args.read[0], int(args.read[1]), args.readers))))
        return
    trace = build_trace(args.events)
    unpacked = len(gzip.decompress(trace))
    print(
        f"trace: {args.events} events, {unpacked / MIB:.1f} MiB unpacked, {len(trace) / MIB:.2f} MiB gzipped"
    )
    print(
        f"{'run':>3} {'peak +MiB':>10} {'held +MiB':>10} {'parses':>6} {'seconds':>8} {'steps':>6} {'dropped':>8}"
    )
    readings = []
    for run in range(1, args.runs + 1):
        reading = run_once(trace, args.readers)
        readings.append(reading)
        print(
            f"{run:>3} {reading.growth_mib:>10.1f} {reading.held_mib:>10.1f} {reading.parses:>6} "
            f"{reading.seconds:>8.2f} {reading.steps!s:>6} {reading.dropped!s:>8}"
        )
    print(
        f"median: peak +{statistics.median(r.growth_mib for r in readings):.1f} MiB, "
        f"held +{statistics.median(r.held_mib for r in readings):.1f} MiB, "
        f"parsed {statistics.median(r.parses for r in readings):g} time(s), "
        f"{statistics.median(r.seconds for r in readings):.2f} s ({args.readers} readers at once)"
    )


if __name__ == "__main__":
    main()
