"""Store one result: validate, resolve case, hardware, commit and candidate, write the run once."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field, replace

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.access.redaction import Redactor, secret_values
from tracker.enums import JobReason, RunSource, RunStatus
from tracker.errors import Conflict, InvalidInput, PayloadTooLarge
from tracker.ingest.files import EVIDENCE_EXCLUSION, store_files
from tracker.ingest.resolving import ImportResolver
from tracker.ingest.rows import run_rows
from tracker.models import Job, Run, Runner, utcnow
from tracker.observability.metrics import record_result
from tracker.outputs.storing import insert_outputs
from tracker.queue.jobs import finish_job, live_job
from tracker.series.counts import count_run
from tracker.series.latest import note_stored_runs
from tracker.settings import FLAGGED_RERUN_BUDGET_S, Settings
from tracker.vcs.commits import fill_in_commit
from wire import JobResultIn, MeasurementIn, OutputIn, ResultIn

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestLimits:
    """Size limits an upload must respect, whether detection waits for the scheduler, how long a
    flagged run's job is measured again (seconds since its first flagged try), whether other
    processes' CPU time flags a CPU run (``Settings.flag_cpu_contention``), and the redactor its
    text goes through (with every secret the settings hold)."""

    max_log_bytes: int
    max_steps_per_run: int
    defer_detection: bool = False
    rerun_budget_s: float = FLAGGED_RERUN_BUDGET_S
    flag_cpu_contention: bool = True
    redactor: Redactor = field(default_factory=Redactor, compare=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> IngestLimits:
        """The limits, detection mode, re-run budget and held secrets the settings give."""
        return cls(
            max_log_bytes=settings.max_log_bytes,
            max_steps_per_run=settings.max_steps_per_run,
            defer_detection=settings.detection_deferred,
            rerun_budget_s=settings.flagged_rerun_budget_s,
            flag_cpu_contention=settings.flag_cpu_contention,
            redactor=Redactor(secret_values(settings)),
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
    """The key of an upload that did not bring one: its version-1 digest, which every upload has and
    which a field added later leaves as it was (see :mod:`wire.digests`)."""
    return "sha256:" + result.digest(1)


def ingest_result(
    *,
    session: Session,
    result: ResultIn,
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
    now: dt.datetime | None = None,
) -> IngestOutcome:
    """Store ``result`` once; a repeat with the same idempotency key returns the stored run."""
    check_limits(result, limits)
    digest = result.digest()
    key = result.idempotency_key or derive_idempotency_key(result)
    existing = find_by_key(session=session, key=key, result=result)
    if existing is not None:
        return IngestOutcome(run=existing, created=False)

    resolved = ImportResolver(session).resolve(result)
    rows = run_rows(
        result,
        key=key,
        digest=digest,
        source=source,
        cpu_contention=limits.flag_cpu_contention,
        redactor=limits.redactor,
    )
    run = rows.as_run()
    run.case = resolved.case
    run.hardware_kind = resolved.kind
    run.candidate = resolved.candidate
    run.commit = resolved.commit
    outcome = _insert_once(session=session, run=run, key=key, result=result)
    if outcome.created:
        _store_output(session=session, run=run, output=result.output)
        record_result(source=run.source.value, status=run.status.value)
    return replace(outcome, warnings=resolved.warnings)


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
    check_limits(result, limits)
    digest = result.digest()
    key = f"job:{job_id}:{result.attempt}"
    existing = find_by_key(session=session, key=key, result=result)
    if existing is not None:
        return IngestOutcome(run=existing, created=False)
    job = live_job(session=session, runner=runner, job_id=job_id, attempt=result.attempt, now=now)
    base = job.candidate.base_commit
    warnings: tuple[str, ...] = ()
    if result.commit is not None:
        if not (base.sha.startswith(result.commit.sha) or result.commit.sha.startswith(base.sha)):
            raise InvalidInput("commit.sha", f"{result.commit.sha} is not the job's base commit {base.sha}")
        # The job's base is the commit measured: the upload fills in what it lacks, never its sha.
        warnings = tuple(fill_in_commit(base, result.commit))
        for line in warnings:
            logger.warning("%s (job %d)", line, job_id)
    rows = run_rows(
        result,
        key=key,
        digest=digest,
        source=RunSource.JOB,
        cpu_contention=limits.flag_cpu_contention,
        redactor=limits.redactor,
    )
    run = rows.as_run()
    run.case_id = job.case_id
    run.hardware_kind_id = job.hardware_kind_id
    run.candidate_id = job.candidate_id
    run.commit_id = base.id
    run.job_id = job.id
    run.attempt = result.attempt
    run.runner_id = runner.id
    if job.reason is JobReason.EVIDENCE and run.excluded_reason is None:
        run.excluded_reason = EVIDENCE_EXCLUSION  # profiled: never a point of its series
    outcome = _insert_once(session=session, run=run, key=key, result=result)
    if outcome.created:
        store_files(session=session, run_id=run.id, files=result.files)
        _store_output(session=session, run=run, output=result.output)
        record_result(source=run.source.value, status=run.status.value)
        finished_at = now or utcnow()
        finish_job(job=job, runner=runner, failure_reason=run.failure_reason, now=finished_at)
        session.flush()
    return replace(outcome, warnings=warnings, job=job)


def _store_output(*, session: Session, run: Run, output: OutputIn | None) -> None:
    """The run's saved output and its references (checked to decode when the rows were built)."""
    if output is not None:
        insert_outputs(session, {run.id: output})


def check_limits(result: MeasurementIn, limits: IngestLimits) -> None:
    """Refuse (:class:`PayloadTooLarge`) an upload whose log or step times are over the limits."""
    log_bytes = len(result.raw_log.encode("utf-8"))
    if log_bytes > limits.max_log_bytes:
        raise PayloadTooLarge(f"raw_log: {log_bytes} bytes is over the limit of {limits.max_log_bytes} bytes")
    if len(result.step_times_ms) > limits.max_steps_per_run:
        raise PayloadTooLarge(
            f"step_times_ms: {len(result.step_times_ms)} values is over the limit of {limits.max_steps_per_run}"
        )


def _insert_once(*, session: Session, run: Run, key: str, result: MeasurementIn) -> IngestOutcome:
    try:
        with session.begin_nested():
            session.add(run)
            session.flush()
    except IntegrityError:
        # A concurrent upload with the same key won the race; answer with its run.
        existing = find_by_key(session=session, key=key, result=result)
        if existing is None:
            raise
        return IngestOutcome(run=existing, created=False)
    count_run(
        session=session,
        case_id=run.case_id,
        hardware_kind_id=run.hardware_kind_id,
        failed=run.status is RunStatus.FAILED,
    )
    note_stored_runs(session=session, run_ids=[run.id])  # the overview's newest points, last nightly
    return IngestOutcome(run=run, created=True)


def find_by_key(*, session: Session, key: str, result: MeasurementIn) -> Run | None:
    """The run stored under ``key``; :class:`Conflict` when it was stored for another payload than
    ``result`` (compared in the canonical form its stored digest names)."""
    run = session.scalar(select(Run).where(Run.idempotency_key == key))
    if run is not None and not result.matches_digest(run.payload_digest):
        raise key_reused(key, run.id)
    return run


def key_reused(key: str, run_id: int) -> Conflict:
    """The refusal of an upload whose idempotency key names another payload's run."""
    return Conflict(f"idempotency_key {key!r} was already used for a different result (run {run_id})")
