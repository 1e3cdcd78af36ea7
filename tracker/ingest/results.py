"""Store one result: validate, resolve case, hardware, commit and candidate, write the run once."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.access.redaction import redact_environment, redact_text
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.errors import Conflict, InvalidInput, PayloadTooLarge
from tracker.ingest.conditions import flag_run
from tracker.models import Job, Run, RunArtifacts, Runner, RunSource, RunStage, RunStatus, utcnow
from tracker.observability.metrics import record_result
from tracker.queue.jobs import finish_job, live_job
from tracker.series.counts import count_run
from tracker.settings import Settings
from tracker.statistics.steps import summarize_steps, value_of_record
from tracker.vcs.commits import ensure_candidate, record_commit
from wire import JobResultIn, MeasurementIn, ResultIn


@dataclass(frozen=True)
class IngestLimits:
    """Size limits an upload must respect, and whether detection waits for the scheduler."""

    max_log_bytes: int
    max_steps_per_run: int
    defer_detection: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> IngestLimits:
        """The limits and detection mode the settings give."""
        return cls(
            max_log_bytes=settings.max_log_bytes,
            max_steps_per_run=settings.max_steps_per_run,
            defer_detection=settings.detection_deferred,
        )


@dataclass(frozen=True)
class IngestOutcome:
    """The stored run, and whether this call created it (``False``: a repeat of an earlier upload).

    ``job``: the job the run finished (uploads of job attempts). Storing reacts to nothing: what
    follows a new run is :mod:`tracker.workflows.results`'s to do.

    ``warnings``: what the upload said about a known commit that was not applied (see
    :func:`tracker.vcs.commits.record_commit`), for the uploader to hear.
    """

    run: Run
    created: bool
    warnings: tuple[str, ...] = ()
    job: Job | None = None


def derive_idempotency_key(result: ResultIn) -> str:
    """The key of an upload that did not bring one: the digest of its content."""
    return "sha256:" + result.digest()[:64]


def ingest_result(
    *,
    session: Session,
    result: ResultIn,
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
    now: dt.datetime | None = None,
) -> IngestOutcome:
    """Store ``result`` once; a repeat with the same idempotency key returns the stored run."""
    _check_limits(result, limits)
    digest = result.digest()
    key = result.idempotency_key or derive_idempotency_key(result)
    existing = _find_by_key(session=session, key=key, digest=digest)
    if existing is not None:
        return IngestOutcome(run=existing, created=False)

    case = get_current_case(session=session, slug=result.case)
    kind = get_hardware_kind(session=session, name=result.hardware)
    if case.repository is None:
        raise InvalidInput("case", f"case {case.slug!r} has no repository in its suite")
    recorded = record_commit(session=session, repository=case.repository, commit=result.commit)
    commit = recorded.commit
    candidate = ensure_candidate(session=session, base=commit, patches=result.patches)
    run = _build_run(result, key=key, digest=digest, source=source)
    run.case = case
    run.hardware_kind = kind
    run.candidate = candidate
    run.commit = commit
    outcome = _insert_once(session=session, run=run, key=key, digest=digest)
    if outcome.created:
        record_result(source=run.source.value, status=run.status.value)
    return replace(outcome, warnings=recorded.disagreements)


def ingest_job_result(
    *,
    session: Session,
    runner: Runner,
    job_id: int,
    result: JobResultIn,
    limits: IngestLimits,
    now: dt.datetime | None = None,
) -> IngestOutcome:
    """Store the run of one job attempt; a repeat is answered with the same run.

    An upload for an attempt whose lease expired (or that was handed to another runner) is refused
    with :class:`Conflict` and never touches the live attempt's result.
    """
    _check_limits(result, limits)
    digest = result.digest()
    key = f"job:{job_id}:{result.attempt}"
    existing = _find_by_key(session=session, key=key, digest=digest)
    if existing is not None:
        return IngestOutcome(run=existing, created=False)
    job = live_job(session=session, runner=runner, job_id=job_id, attempt=result.attempt, now=now)
    base = job.candidate.base_commit
    warnings: tuple[str, ...] = ()
    if result.commit is not None:
        if not (base.sha.startswith(result.commit.sha) or result.commit.sha.startswith(base.sha)):
            raise InvalidInput("commit.sha", f"{result.commit.sha} is not the job's base commit {base.sha}")
        warnings = record_commit(
            session=session, repository=base.repository, commit=result.commit
        ).disagreements
    run = _build_run(result, key=key, digest=digest, source=RunSource.JOB)
    run.case_id = job.case_id
    run.hardware_kind_id = job.hardware_kind_id
    run.candidate_id = job.candidate_id
    run.commit_id = base.id
    run.job_id = job.id
    run.attempt = result.attempt
    run.runner_id = runner.id
    artifacts = run.artifacts
    artifacts.patches_applied = list(result.build.patches_applied)
    artifacts.patches_already_in = list(result.build.patches_already_in)
    artifacts.tree_sha = result.build.tree_sha
    artifacts.output_digest = result.output_digest
    outcome = _insert_once(session=session, run=run, key=key, digest=digest)
    if outcome.created:
        record_result(source=run.source.value, status=run.status.value)
        finished_at = now or utcnow()
        finish_job(job=job, runner=runner, failure_reason=run.failure_reason, now=finished_at)
        session.flush()
    return replace(outcome, warnings=warnings, job=job)


def _check_limits(result: MeasurementIn, limits: IngestLimits) -> None:
    log_bytes = len(result.raw_log.encode("utf-8"))
    if log_bytes > limits.max_log_bytes:
        raise PayloadTooLarge(f"raw_log: {log_bytes} bytes is over the limit of {limits.max_log_bytes} bytes")
    if len(result.step_times_ms) > limits.max_steps_per_run:
        raise PayloadTooLarge(
            f"step_times_ms: {len(result.step_times_ms)} values is over the limit of {limits.max_steps_per_run}"
        )


def _insert_once(*, session: Session, run: Run, key: str, digest: str) -> IngestOutcome:
    try:
        with session.begin_nested():
            session.add(run)
            session.flush()
    except IntegrityError:
        # A concurrent upload with the same key won the race; answer with its run.
        existing = _find_by_key(session=session, key=key, digest=digest)
        if existing is None:
            raise
        return IngestOutcome(run=existing, created=False)
    count_run(
        session=session,
        case_id=run.case_id,
        hardware_kind_id=run.hardware_kind_id,
        failed=run.status is RunStatus.FAILED,
    )
    return IngestOutcome(run=run, created=True)


def _find_by_key(*, session: Session, key: str, digest: str) -> Run | None:
    run = session.scalar(select(Run).where(Run.idempotency_key == key))
    if run is not None and run.payload_digest != digest:
        raise Conflict(f"idempotency_key {key!r} was already used for a different result (run {run.id})")
    return run


def _build_run(result: MeasurementIn, *, key: str, digest: str, source: RunSource) -> Run:
    run = Run(
        idempotency_key=key,
        payload_digest=digest,
        source=source,
        status=RunStatus(result.status),
        failure_reason=None if result.failure_reason is None else redact_text(result.failure_reason),
        denoise_stage_ms=result.denoise_stage_ms,
        e2e_ms=result.e2e_ms,
        peak_memory_mb=result.peak_memory_mb,
        graph_breaks=result.compile.graph_breaks,
        recompiles=result.compile.recompiles,
        unique_graphs=result.compile.unique_graphs,
        frames_compiled=result.compile.frames_compiled,
        requests_seen=result.requests_seen,
        warmup_requests=result.warmup_requests,
        warnings=[redact_text(warning) for warning in result.warnings],
        sources=list(result.sources),
        measured_at=result.measured_at,
        stages=[
            RunStage(position=position, name=stage.name, duration_ms=stage.duration_ms)
            for position, stage in enumerate(result.stages)
        ],
        artifacts=RunArtifacts(
            step_times_ms=list(result.step_times_ms),
            # Logs and commands are served to every reader: tokens in them are not stored.
            environment=redact_environment(result.environment),
            command=redact_text(result.command),
            raw_log=redact_text(result.raw_log),
            log_truncated=result.log_truncated,
            perf_dump=None if result.perf_dump is None else redact_environment(result.perf_dump),
        ),
    )
    if result.status == "ok":
        _fill_step_summary(run, result)
    # Measured beside a CPU hog or on a throttled GPU: stored, but flagged and left out of detection.
    flag_run(run, result.environment)
    return run


def _fill_step_summary(run: Run, result: MeasurementIn) -> None:
    if result.step_times_ms:
        summary = summarize_steps(result.step_times_ms)
        clock = (result.perf_dump or {}).get("denoise_step_clock")
        run.denoise_step_ms, run.denoise_step_basis = value_of_record(
            summary, step_clock=clock if isinstance(clock, str) else None
        )
        run.denoise_step_count = summary.count
        run.denoise_step_median_ms = summary.median_ms
        run.denoise_step_mean_ms = summary.mean_ms
        run.denoise_step_first_ms = summary.first_ms
        run.denoise_step_steady_ms = summary.steady_ms
        run.denoise_step_iqr_ms = summary.iqr_ms
        return
    # Only the log's average is known: it is the value of record, and the run says so.
    run.denoise_step_ms = result.denoise_step_mean_ms
    run.denoise_step_basis = "mean"
    run.denoise_step_count = result.denoise_step_count
    run.denoise_step_mean_ms = result.denoise_step_mean_ms
