"""Fill a database with a year of nightly history at real shape, fast.

Small tables (repository, cases, hardware kinds, commits, candidates, runners and their tokens,
comparisons) go through the tracker's own functions. The big ones (``jobs``, ``job_attempts``, ``runs``,
``run_stages``, ``run_artifacts``) are written with SQLAlchemy Core ``executemany`` from the same
payload a runner uploads (:class:`wire.JobResultIn`), each row holding exactly what
:func:`tracker.ingest.results.ingest_job_result` stores for it (``tests/tracker/views/test_scale_generator.py``
checks this column by column). Alerts come from the real detection sweep over the result.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, func, insert, select, text
from sqlalchemy.orm import Session

from benchmarks.scale.shape import HARDWARE, CaseShape, SeriesShape, case_shapes, series_shape, suite_toml
from tracker import db
from tracker.access.tokens import create_token
from tracker.catalog.cases import get_current_case, get_hardware_kind, sync_suites
from tracker.catalog.suites import load_suites
from tracker.enums import Arm, AttemptOutcome, ComparisonState, JobReason, JobState, TokenRole, Verdict
from tracker.models import (
    Candidate,
    Case,
    Commit,
    Comparison,
    ComparisonResult,
    HardwareKind,
    Job,
    JobAttempt,
    Run,
    RunArtifacts,
    RunStage,
)
from tracker.queue.jobs import PRIORITY
from tracker.queue.runners import register_runner
from tracker.series.counts import rebuild_series_counts
from tracker.series.latest import rebuild_series_latest
from tracker.statistics.steps import summarize_steps
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows.sweep import sweep
from wire import BuildInfo, CommitIn, CompileCounters, JobResultIn, StageIn

START = dt.datetime(2025, 12, 1, 1, 0, tzinfo=dt.UTC)
FAILURES = (
    "exit code 1: torch.OutOfMemoryError: CUDA out of memory",
    "timed out after 3600 s",
    "exit code 0 but no denoise step timings in the log",
    "NCCL error: unhandled system error",
)
CHUNK = 2000
# The tables whose ids the writer hands out itself.
_ID_TABLES = ("jobs", "job_attempts", "runs", "run_stages")


@dataclass(frozen=True)
class ScaleConfig:
    """How much history to generate; the defaults are a full year at real shape."""

    nights: int = 365
    cases: int = 60
    hardware: int = 4
    steps: int = 50
    comparisons: int = 40
    runners_per_kind: int = 8
    failure_rate: float = 0.01
    seed: int = 2026

    @property
    def hardware_names(self) -> list[str]:
        """The hardware kinds used, fastest-growing fleet first."""
        return list(HARDWARE)[: self.hardware]


@dataclass
class GenerateReport:
    """What was generated and how long it took."""

    runs: int = 0
    failed_runs: int = 0
    step_times: int = 0
    comparisons: int = 0
    alerts: int = 0
    planted_changes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def write_suite(suite_dir: Path, config: ScaleConfig) -> Path:
    """Write the generated suite file (the tracker syncs it at start-up) and return its path."""
    suite_dir.mkdir(parents=True, exist_ok=True)
    path = suite_dir / "scale.toml"
    path.write_text(suite_toml(case_shapes(config.cases), config.hardware_names))
    return path


def commit_in(night: int) -> CommitIn:
    """The branch head measured on a night (one commit a night, parent the previous night's)."""
    return CommitIn(
        sha=f"{0x5CA1E000 + night:08x}" + f"{night * 7919 % 0xFFFFFFFF:08x}" + "c" * 24,
        parents=[f"{0x5CA1E000 + night - 1:08x}" + f"{(night - 1) * 7919 % 0xFFFFFFFF:08x}" + "c" * 24]
        if night
        else [],
        title=f"[diffusion] nightly head {night}: refactor attention backend selection",
        author_name="Scale Bench",
        author_email="bench@example.com",
        branch="main",
        committed_at=START + dt.timedelta(days=night, hours=-3),
    )


def nightly_payload(
    *,
    shape: SeriesShape,
    case: CaseShape,
    hardware: str,
    night: int,
    steps: int,
    measured_at: dt.datetime,
    rng: random.Random,
    failure: str | None = None,
    attempt: int = 1,
) -> JobResultIn:
    """What a runner uploads for one nightly run: per-step times, stages, log and environment."""
    command = f"sglang generate --model-path {case.family.model} --num-inference-steps {steps} " + " ".join(
        f"--{key} {value}" for key, value in case.params.items() if key != "num-inference-steps"
    )
    environment = {
        "gpu": HARDWARE[hardware][0],
        "driver": "580.65.06",
        "cuda": "12.9",
        "torch": "2.9.1",
        "sglang": f"0.5.{night // 30}",
        "host": f"{hardware.lower()}-node-{rng.randrange(16):02d}",
    }
    build = BuildInfo(tree_sha=f"{night * 104729 + 0xABCDEF:040x}"[-40:])
    if failure is not None:
        return JobResultIn(
            attempt=attempt,
            status="failed",
            failure_reason=failure,
            raw_log=f"[sglang] loading {case.family.model}\n{failure}\n",
            environment=environment,
            command=command,
            measured_at=measured_at,
            build=build,
        )
    level = shape.level(night)
    step_times = [round(level * (1.35 + rng.gauss(0, 0.02)), 2)]  # step 0: warm caches
    step_times += [round(level * (1 + rng.gauss(0, shape.noise_cv)), 2) for _ in range(steps - 1)]
    denoise = round(sum(step_times), 2)
    encode = round(level * 0.21 * (1 + rng.gauss(0, 0.01)), 2)
    decode = round(level * 0.64 * (1 + rng.gauss(0, 0.01)), 2)
    log_lines = [f"[sglang] {case.family.model}: {steps} steps"]
    log_lines += [f"[denoise] step {i + 1}/{steps} took {value:.2f} ms" for i, value in enumerate(step_times)]
    log_lines.append(f"[sglang] pixel data generated in {(denoise + encode + decode) / 1000:.2f} seconds")
    return JobResultIn(
        attempt=attempt,
        step_times_ms=step_times,
        denoise_stage_ms=denoise,
        stages=[
            StageIn(name="TextEncodingStage", duration_ms=encode),
            StageIn(name="DenoisingStage", duration_ms=denoise),
            StageIn(name="DecodingStage", duration_ms=decode),
        ],
        e2e_ms=round(denoise + encode + decode + 180.0, 2),
        peak_memory_mb=round(case.family.peak_memory_mb * (1 + rng.gauss(0, 0.002)), 1),
        compile=CompileCounters(graph_breaks=0, recompiles=0, unique_graphs=4, frames_compiled=12),
        requests_seen=1,
        warmup_requests=1,
        sources=["log"],
        environment=environment,
        command=command,
        raw_log="\n".join(log_lines) + "\n",
        measured_at=measured_at,
        build=build,
        output_digest=f"sha256:{rng.getrandbits(128):032x}",
    )


def run_rows(
    result: JobResultIn,
    *,
    run_id: int,
    job_id: int,
    case_id: int,
    hardware_kind_id: int,
    candidate_id: int,
    commit_id: int,
    runner_id: int,
    created_at: dt.datetime,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The ``runs``, ``run_stages`` and ``run_artifacts`` rows ingest stores for a job's upload."""
    run: dict[str, Any] = {
        "id": run_id,
        "idempotency_key": f"job:{job_id}:{result.attempt}",
        "payload_digest": result.digest(),
        "source": "job",
        "status": result.status,
        "failure_reason": result.failure_reason,
        "case_id": case_id,
        "hardware_kind_id": hardware_kind_id,
        "candidate_id": candidate_id,
        "commit_id": commit_id,
        "job_id": job_id,
        "attempt": result.attempt,
        "runner_id": runner_id,
        "denoise_step_ms": None,
        "denoise_step_basis": None,
        "denoise_step_count": None,
        "denoise_step_mean_ms": None,
        "denoise_step_median_ms": None,
        "denoise_step_first_ms": None,
        "denoise_step_steady_ms": None,
        "denoise_step_iqr_ms": None,
        "denoise_stage_ms": result.denoise_stage_ms,
        "e2e_ms": result.e2e_ms,
        "peak_memory_mb": result.peak_memory_mb,
        "graph_breaks": result.compile.graph_breaks,
        "recompiles": result.compile.recompiles,
        "unique_graphs": result.compile.unique_graphs,
        "frames_compiled": result.compile.frames_compiled,
        "requests_seen": result.requests_seen,
        "warmup_requests": result.warmup_requests,
        "warnings": list(result.warnings),
        "sources": list(result.sources),
        "measured_at": result.measured_at,
        "excluded_reason": None,
        "measurement_flag": None,
        "rerun_job_id": None,
        "created_at": created_at,
    }
    if result.status == "ok" and result.step_times_ms:
        summary = summarize_steps(result.step_times_ms)
        run.update(
            denoise_step_ms=summary.median_ms,
            denoise_step_basis="median",
            denoise_step_count=summary.count,
            denoise_step_median_ms=summary.median_ms,
            denoise_step_mean_ms=summary.mean_ms,
            denoise_step_first_ms=summary.first_ms,
            denoise_step_steady_ms=summary.steady_ms,
            denoise_step_iqr_ms=summary.iqr_ms,
        )
    stages = [
        {"run_id": run_id, "position": position, "name": stage.name, "duration_ms": stage.duration_ms}
        for position, stage in enumerate(result.stages)
    ]
    artifacts = {
        "run_id": run_id,
        "step_times_ms": list(result.step_times_ms),
        "environment": result.environment,
        "command": result.command,
        "raw_log": result.raw_log,
        "log_truncated": result.log_truncated,
        "perf_dump": result.perf_dump,
        "output_digest": result.output_digest,
        "patches_applied": list(result.build.patches_applied),
        "patches_already_in": list(result.build.patches_already_in),
        "tree_sha": result.build.tree_sha,
    }
    return run, stages, artifacts


def job_key_of(
    *, candidate_key: str, case_id: int, kind_id: int, reason: JobReason, purpose: str = ""
) -> str:
    """The idempotency key :func:`tracker.queue.jobs.enqueue_job` gives a job, from ids alone."""
    return f"{reason.value}:{candidate_key[:32]}:{case_id}:{kind_id}:{purpose}"[:128]


def job_row(
    *,
    job_id: int,
    key: str,
    candidate_id: int,
    case: Case,
    kind: HardwareKind,
    reason: JobReason,
    runner: tuple[int, str],
    leased_at: dt.datetime,
    finished_at: dt.datetime,
    failure: str | None,
    comparison: tuple[int, int, Arm] | None = None,
) -> dict[str, Any]:
    """A job that one runner leased once and finished (done, or failed with the run's reason)."""
    return {
        "id": job_id,
        "idempotency_key": key,
        "candidate_id": candidate_id,
        "case_id": case.id,
        "hardware_kind_id": kind.id,
        "num_gpus": case.num_gpus,
        "reason": reason.value,
        "priority": PRIORITY[reason],
        "state": (JobState.FAILED if failure else JobState.DONE).value,
        "attempts": 1,
        "max_attempts": 3,
        "leased_by_runner_id": None,
        "leased_at": leased_at,
        "lease_expires_at": None,
        "failure_reason": failure,
        "comparison_id": comparison[0] if comparison else None,
        "comparison_round": comparison[1] if comparison else None,
        "arm": comparison[2].value if comparison else None,
        "alert_id": None,
        "requested_by": "" if comparison is None else "scale-bench",
        "created_at": leased_at - dt.timedelta(minutes=30),
        "finished_at": finished_at,
    }


def attempt_row(
    *, job_id: int, runner_id: int, leased_at: dt.datetime, finished_at: dt.datetime, failure: str | None
) -> dict[str, Any]:
    """The one attempt of a :func:`job_row` job (without its ``id``)."""
    return {
        "job_id": job_id,
        "number": 1,
        "runner_id": runner_id,
        "outcome": (AttemptOutcome.FAILED if failure else AttemptOutcome.DONE).value,
        "reason": failure or "",
        "started_at": leased_at,
        "ended_at": finished_at,
    }


class _Writer:
    """Buffers rows of the big tables and writes them in ``executemany`` chunks."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.tables: list[Table] = [
            Job.__table__,  # type: ignore[list-item]
            JobAttempt.__table__,  # type: ignore[list-item]
            Run.__table__,  # type: ignore[list-item]
            RunStage.__table__,  # type: ignore[list-item]
            RunArtifacts.__table__,  # type: ignore[list-item]
        ]
        self.buffers: dict[str, list[dict[str, Any]]] = {table.name: [] for table in self.tables}
        self.next_id = {name: self._max_id(name) + 1 for name in _ID_TABLES}

    def _max_id(self, name: str) -> int:
        sql = f"SELECT COALESCE(MAX(id), 0) FROM {name}"  # noqa: S608 - one of the fixed _ID_TABLES
        return int(self.connection.execute(text(sql)).scalar_one())

    def take_id(self, name: str) -> int:
        value = self.next_id[name]
        self.next_id[name] = value + 1
        return value

    def add(
        self,
        job: dict[str, Any],
        attempt: dict[str, Any],
        run: dict[str, Any],
        stages: list[dict[str, Any]],
        art: dict[str, Any],
    ) -> None:
        self.buffers["jobs"].append(job)
        self.buffers["job_attempts"].append({"id": self.take_id("job_attempts"), **attempt})
        self.buffers["runs"].append(run)
        for stage in stages:
            stage["id"] = self.take_id("run_stages")
            self.buffers["run_stages"].append(stage)
        self.buffers["run_artifacts"].append(art)
        if len(self.buffers["runs"]) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        for table in self.tables:
            rows = self.buffers[table.name]
            if rows:
                self.connection.execute(insert(table), rows)
                rows.clear()

    def fix_sequences(self) -> None:
        """PostgreSQL: move each id sequence past the ids written here."""
        if self.connection.dialect.name != "postgresql":
            return
        for name in _ID_TABLES:
            sql = f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), (SELECT MAX(id) FROM {name}))"  # noqa: S608
            self.connection.execute(text(sql))


def generate(url: str, suite_dir: Path, config: ScaleConfig, *, sweep_alerts: bool = True) -> GenerateReport:
    """Migrate ``url``, sync the generated suite and write the history; returns what it wrote.

    Parameters
    ----------
    url
        SQLAlchemy URL of an empty (or freshly migrated) database.
    suite_dir
        Folder for the generated suite file (the server under test syncs it at start-up).
    config
        How much history to write.
    sweep_alerts
        Run the real detection sweep at the end, so the series' step changes raise alerts.
    """
    report = GenerateReport()
    rng = random.Random(config.seed)  # noqa: S311 - synthetic timings, not secrets
    started = time.perf_counter()
    db.upgrade(url)
    write_suite(suite_dir, config)
    engine = db.make_engine(url)
    shapes = case_shapes(config.cases)
    with db.session_scope(db.make_session_factory(engine)) as session:
        sync_suites(session=session, suites=load_suites(suite_dir))
        cases = {shape.slug: get_current_case(session=session, slug=shape.slug) for shape in shapes}
        kinds = {name: get_hardware_kind(session=session, name=name) for name in config.hardware_names}
        runners = _runners(session, kinds, config)
        repository = next(iter(cases.values())).repository
        assert repository is not None
        commits: list[Commit] = []
        candidates: list[Candidate] = []
        for night in range(config.nights):
            commit = upsert_commit(session=session, repository=repository, commit=commit_in(night))
            commits.append(commit)
            candidates.append(ensure_candidate(session=session, base=commit, patches=[]))
        session.flush()
        report.seconds["catalog"] = time.perf_counter() - started

        phase = time.perf_counter()
        writer = _Writer(session.connection())
        series = {
            (shape.slug, name): series_shape(shape, name, config.nights, rng)
            for shape in shapes
            for name in config.hardware_names
        }
        report.planted_changes = sum(len(s.changes) for s in series.values())
        for night in range(config.nights):
            for shape in shapes:
                case = cases[shape.slug]
                for name, kind in kinds.items():
                    failure = rng.choice(FAILURES) if rng.random() < config.failure_rate else None
                    _add_run(
                        writer,
                        rng,
                        config,
                        shape=shape,
                        series=series[(shape.slug, name)],
                        case=case,
                        kind=kind,
                        night=night,
                        commit=commits[night],
                        candidate=candidates[night],
                        runner=rng.choice(runners[name]),
                        failure=failure,
                    )
                    report.runs += 1
                    report.failed_runs += failure is not None
                    report.step_times += 0 if failure else config.steps
        writer.flush()
        report.seconds["nightly rows"] = time.perf_counter() - phase

        phase = time.perf_counter()
        report.comparisons = _comparisons(
            session,
            writer,
            rng,
            config,
            shapes=shapes,
            cases=cases,
            kinds=kinds,
            series=series,
            commits=commits,
            runners=runners,
            report=report,
        )
        writer.flush()
        writer.fix_sequences()
        report.seconds["comparisons"] = time.perf_counter() - phase
        session.commit()

        rebuild_series_counts(session=session)  # the rows went around ingest, which keeps them
        rebuild_series_latest(session=session)  # so does the overview's read model
        session.commit()
        phase = time.perf_counter()
        if engine.dialect.name == "postgresql":
            # What autovacuum does after a bulk load (PostgreSQL 13+ vacuums after inserts too):
            # statistics for the planner and a visibility map for index-only scans.
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("VACUUM ANALYZE"))
        if sweep_alerts:
            sweep(session=session, now=START + dt.timedelta(days=config.nights))
            session.commit()
        report.alerts = int(session.execute(text("SELECT COUNT(*) FROM alerts")).scalar_one())
        report.seconds["sweep"] = time.perf_counter() - phase
    engine.dispose()
    report.seconds["total"] = time.perf_counter() - started
    return report


def _runners(
    session: Session, kinds: dict[str, HardwareKind], config: ScaleConfig
) -> dict[str, list[tuple[int, str]]]:
    runners: dict[str, list[tuple[int, str]]] = {}
    for name, kind in kinds.items():
        runners[name] = []
        for index in range(config.runners_per_kind):
            runner_name = f"scale-{name.lower()}-{index:02d}"
            issued = create_token(session=session, name=f"token-{runner_name}", role=TokenRole.RUNNER)
            runner = register_runner(
                session=session,
                name=runner_name,
                hardware=kind,
                gpu_count=8,
                labels={"pool": "nightly"},
                version="0.9.0",
                host=f"{name.lower()}-node-{index:02d}",
                token=issued.token,
                now=START + dt.timedelta(days=config.nights),
            )
            runners[name].append((runner.id, runner.name))
    session.flush()
    return runners


def _add_run(
    writer: _Writer,
    rng: random.Random,
    config: ScaleConfig,
    *,
    shape: CaseShape,
    series: SeriesShape,
    case: Case,
    kind: HardwareKind,
    night: int,
    commit: Commit,
    candidate: Candidate,
    runner: tuple[int, str],
    failure: str | None,
    reason: JobReason = JobReason.NIGHTLY,
    purpose: str = "",
    comparison: tuple[int, int, Arm] | None = None,
    level_factor: float = 1.0,
) -> JobResultIn:
    leased_at = START + dt.timedelta(days=night, minutes=rng.randrange(0, 300))
    measured_at = leased_at + dt.timedelta(minutes=4)
    shaped = SeriesShape(series.base_ms * level_factor, series.noise_cv, series.changes)
    result = nightly_payload(
        shape=shaped,
        case=shape,
        hardware=kind.name,
        night=night,
        steps=config.steps,
        measured_at=measured_at,
        rng=rng,
        failure=failure,
    )
    finished_at = measured_at + dt.timedelta(seconds=90)
    job_id = writer.take_id("jobs")
    key = job_key_of(
        candidate_key=candidate.key, case_id=case.id, kind_id=kind.id, reason=reason, purpose=purpose
    )
    job = job_row(
        job_id=job_id,
        key=key,
        candidate_id=candidate.id,
        case=case,
        kind=kind,
        reason=reason,
        runner=runner,
        leased_at=leased_at,
        finished_at=finished_at,
        failure=failure,
        comparison=comparison,
    )
    run, stages, artifacts = run_rows(
        result,
        run_id=writer.take_id("runs"),
        job_id=job_id,
        case_id=case.id,
        hardware_kind_id=kind.id,
        candidate_id=candidate.id,
        commit_id=commit.id,
        runner_id=runner[0],
        created_at=finished_at,
    )
    attempt = attempt_row(
        job_id=job_id, runner_id=runner[0], leased_at=leased_at, finished_at=finished_at, failure=failure
    )
    writer.add(job, attempt, run, stages, artifacts)
    return result


def _comparisons(
    session: Session,
    writer: _Writer,
    rng: random.Random,
    config: ScaleConfig,
    *,
    shapes: list[CaseShape],
    cases: dict[str, Case],
    kinds: dict[str, HardwareKind],
    series: dict[tuple[str, str], SeriesShape],
    commits: list[Commit],
    runners: dict[str, list[tuple[int, str]]],
    report: GenerateReport,
) -> int:
    """PR comparisons: a base and a PR head candidate, 2 interleaved rounds per case, a verdict each."""
    count = min(config.comparisons, config.nights)
    for index in range(count):
        night = rng.randrange(config.nights)
        base = ensure_candidate(session=session, base=commits[night], patches=[])
        pr_number = 44_000 + index
        head = ensure_candidate(session=session, base=commits[night], patches=[f"refs/pull/{pr_number}/head"])
        effect = rng.choice((1.0, 1.0, 0.95, 1.06))
        finished = START + dt.timedelta(days=night, hours=14)
        comparison = Comparison(
            repository_id=base.repository_id,
            base_candidate=base,
            head_candidate=head,
            state=ComparisonState.DONE,
            rounds=2,
            rounds_scheduled=2,
            max_rounds=8,
            requests_per_round=5,
            pr_number=pr_number,
            pr_url=f"https://github.com/sgl-project/sglang/pull/{pr_number}",
            command="/perf",
            requested_by="scale-bench",
            github_repository="sgl-project/sglang",
            head_sha=commits[night].sha,
            created_at=finished - dt.timedelta(hours=2),
            finished_at=finished,
        )
        session.add(comparison)
        session.flush()
        for shape in rng.sample(shapes, k=min(len(shapes), rng.randint(1, 3))):
            name = rng.choice(list(kinds))
            case, kind = cases[shape.slug], kinds[name]
            values: dict[Arm, list[float]] = {Arm.BASE: [], Arm.HEAD: []}
            for round_number in (1, 2):
                for arm, candidate in ((Arm.BASE, base), (Arm.HEAD, head)):
                    result = _add_run(
                        writer,
                        rng,
                        config,
                        shape=shape,
                        series=series[(shape.slug, name)],
                        case=case,
                        kind=kind,
                        night=night,
                        commit=commits[night],
                        candidate=candidate,
                        runner=rng.choice(runners[name]),
                        failure=None,
                        reason=JobReason.PR,
                        purpose=f"cmp{comparison.id}:r{round_number}:{arm.value}",
                        comparison=(comparison.id, round_number, arm),
                        level_factor=effect if arm is Arm.HEAD else 1.0,
                    )
                    values[arm].append(statistics.median(result.step_times_ms))
                    report.runs += 1
                    report.step_times += config.steps
            base_value, head_value = statistics.mean(values[Arm.BASE]), statistics.mean(values[Arm.HEAD])
            change = (head_value / base_value - 1) * 100
            verdict = (
                Verdict.NO_CHANGE
                if abs(change) < 2
                else (Verdict.REGRESSION if change > 0 else Verdict.IMPROVEMENT)
            )
            session.add(
                ComparisonResult(
                    comparison_id=comparison.id,
                    case_id=case.id,
                    hardware_kind_id=kind.id,
                    verdict=verdict,
                    base_value=base_value,
                    head_value=head_value,
                    change_pct=change,
                    ci_low_pct=change - 0.8,
                    ci_high_pct=change + 0.8,
                    rounds_done=2,
                    threshold_pct=2.0,
                    threshold_source="model",
                    round_noise_pct=0.6,
                    dof=2,
                    updated_at=finished,
                )
            )
    session.flush()
    return count


def table_counts(connection: Connection) -> Iterator[tuple[str, int]]:
    """Rows per table of interest, for the report."""
    for table in (
        "runs",
        "run_artifacts",
        "run_stages",
        "jobs",
        "commits",
        "alerts",
        "comparisons",
        "runners",
    ):
        yield table, int(connection.execute(select(func.count()).select_from(text(table))).scalar_one())
