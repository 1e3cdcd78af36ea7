"""Store many imports at once, set-based, each exactly as :func:`tracker.ingest.results.ingest_result` would.

A batch is planned, then written. Planning checks each item in order as a single import would
(limits, idempotency key, case, hardware kind, commit, candidate), but looks the stored keys up in
one ``SELECT ... WHERE idempotency_key IN (...)`` and each distinct case, kind, commit and
candidate once (:class:`tracker.ingest.resolving.ImportResolver`); the rows of the new runs come
from the same builder (:func:`tracker.ingest.rows.run_rows`). Writing inserts them with one
multi-row statement per table and adds them to ``series_counts`` once per series. A key stored by
a concurrent upload since the look-up (the unique key refuses the insert) sends every new run of
the batch through its own savepoint: that item is then a duplicate (or refused, for another
payload), never an error. One bad item is refused on its own; the others are stored.

Storing reacts to nothing: what follows (the series marked for the scheduler) is
:mod:`tracker.workflows.batches`'s to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.enums import RunSource, RunStatus
from tracker.errors import InvalidInput, PerftrackError
from tracker.ingest.resolving import ImportResolver
from tracker.ingest.results import IngestLimits, check_limits, derive_idempotency_key, find_by_key, key_reused
from tracker.ingest.rows import RunRows, run_rows
from tracker.models import Base, Job, Run, RunArtifacts, RunStage
from tracker.observability.metrics import record_result
from tracker.outputs.storing import insert_outputs
from tracker.series.counts import count_runs
from tracker.series.latest import note_stored_runs
from wire import ResultIn, validation_message

Model = TypeVar("Model", bound=BaseModel)
_TABLES = (Run.__tablename__, RunStage.__tablename__, RunArtifacts.__tablename__)


class BatchOutcome(StrEnum):
    """What became of one item of a batch."""

    STORED = "stored"  # a new run
    DUPLICATE = "duplicate"  # stored before under the same key, with the same content
    REFUSED = "refused"  # nothing stored; ``error`` says why


@dataclass(frozen=True)
class BatchItem:
    """One item's outcome; ``series`` and ``plain``: the case and hardware kind ids of a stored run,
    and whether it measured a plain commit (a point of that series)."""

    index: int
    outcome: BatchOutcome
    run_id: int | None = None
    warnings: tuple[str, ...] = ()
    error: PerftrackError | None = None
    series: tuple[int, int] | None = None
    plain: bool = False


def refused(index: int, error: PerftrackError) -> BatchItem:
    """Item ``index`` refused for ``error``."""
    return BatchItem(index=index, outcome=BatchOutcome.REFUSED, error=error)


def validate_each(model: type[Model], items: Sequence[object]) -> list[Model | InvalidInput]:
    """Each raw JSON item validated as ``model`` on its own; a bad one becomes its refusal, whose
    message names the field as a single request's 422 would (``step_times_ms[1]: ...``)."""
    validated: list[Model | InvalidInput] = []
    for item in items:
        try:
            validated.append(model.model_validate(item))
        except ValidationError as error:
            where, _, message = validation_message(error).partition(": ")
            validated.append(InvalidInput(where, message))
    return validated


@dataclass(frozen=True)
class _NewRun:
    """An item to insert: its rows (ids of case, kind, commit and candidate filled in)."""

    index: int
    key: str
    digest: str
    result: ResultIn
    rows: RunRows
    warnings: tuple[str, ...]
    plain: bool


@dataclass
class BatchPlan:
    """A batch checked and resolved, not written yet: refusals and duplicates decided, new runs built.

    ``repeats``: items whose key an earlier item of the batch brings (index, that item's index and
    this one's digest), decided once that one is written.
    """

    size: int
    decided: dict[int, BatchItem] = field(default_factory=dict)
    new_runs: list[_NewRun] = field(default_factory=list)
    repeats: list[tuple[int, int, str]] = field(default_factory=list)


def ingest_results(
    *,
    session: Session,
    results: Sequence[ResultIn | PerftrackError],
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
) -> list[BatchItem]:
    """Store each result once (an item already refused, a :class:`PerftrackError`, stays refused);
    the outcomes in the items' order."""
    plan = plan_results(session=session, results=results, limits=limits, source=source)
    return write_plan(session=session, plan=plan)


def plan_results(
    *,
    session: Session,
    results: Sequence[ResultIn | PerftrackError],
    limits: IngestLimits,
    source: RunSource = RunSource.IMPORT,
) -> BatchPlan:
    """Check and resolve every item, in order, as :func:`~tracker.ingest.results.ingest_result` would."""
    plan = BatchPlan(size=len(results))
    keyed: list[tuple[int, ResultIn, str, str]] = []
    for index, result in enumerate(results):
        if isinstance(result, PerftrackError):
            plan.decided[index] = refused(index, result)
            continue
        try:
            check_limits(result, limits)
        except PerftrackError as error:
            plan.decided[index] = refused(index, error)
            continue
        key = result.idempotency_key or derive_idempotency_key(result)
        keyed.append((index, result, key, result.digest()))
    stored = _stored_keys(session=session, keys={key for _, _, key, _ in keyed})
    resolver = ImportResolver(session)
    first_with_key: dict[str, int] = {}
    for index, result, key, digest in keyed:
        if key in stored:
            run_id, stored_digest = stored[key]
            # Stored in another version of the canonical form: digested again in that one.
            same = stored_digest == digest or result.matches_digest(stored_digest)
            plan.decided[index] = (
                BatchItem(index=index, outcome=BatchOutcome.DUPLICATE, run_id=run_id)
                if same
                else refused(index, key_reused(key, run_id))
            )
        elif key in first_with_key:
            plan.repeats.append((index, first_with_key[key], digest))
        else:
            try:
                plan.new_runs.append(
                    _new_run(
                        resolver, result, index=index, key=key, digest=digest, source=source, limits=limits
                    )
                )
            except PerftrackError as error:
                plan.decided[index] = refused(index, error)
                continue
            first_with_key[key] = index
    return plan


def _new_run(
    resolver: ImportResolver,
    result: ResultIn,
    *,
    index: int,
    key: str,
    digest: str,
    source: RunSource,
    limits: IngestLimits,
) -> _NewRun:
    resolved = resolver.resolve(result)
    rows = run_rows(
        result,
        key=key,
        digest=digest,
        source=source,
        cpu_contention=limits.flag_cpu_contention,
        redactor=limits.redactor,
    )
    rows.run.update(
        case_id=resolved.case.id,
        hardware_kind_id=resolved.kind.id,
        candidate_id=resolved.candidate.id,
        commit_id=resolved.commit.id,
    )
    return _NewRun(
        index=index,
        key=key,
        digest=digest,
        result=result,
        rows=rows,
        warnings=resolved.warnings,
        plain=resolved.candidate.is_plain,
    )


def write_plan(*, session: Session, plan: BatchPlan) -> list[BatchItem]:
    """Insert the plan's new runs, count them, and decide its repeats; every item's outcome, in order."""
    session.flush()  # commits filled in and candidates created while planning
    try:
        with session.begin_nested():
            written = _insert_all(session=session, new_runs=plan.new_runs)
    except IntegrityError:
        # A concurrent upload stored one of the keys since the look-up: each run on its own.
        written = [_insert_alone(session=session, new=new) for new in plan.new_runs]
    new_runs = {new.index: new for new in plan.new_runs}
    _record_stored(
        session=session,
        stored=[item for item in written if item.outcome is BatchOutcome.STORED],
        new_runs=new_runs,
    )
    items = dict(plan.decided)
    items.update((item.index, item) for item in written)
    for index, first, digest in plan.repeats:
        items[index] = _repeat(index, items[first], digest, first_new=new_runs[first])
    return [items[index] for index in range(plan.size)]


def _record_stored(*, session: Session, stored: Sequence[BatchItem], new_runs: dict[int, _NewRun]) -> None:
    """Add the stored runs to ``series_counts`` (one upsert for the batch), ``series_latest`` and the metrics."""
    added: dict[tuple[int, int], tuple[int, int]] = {}
    for item in stored:
        assert item.series is not None  # a stored item has its series
        run = new_runs[item.index].rows.run
        runs, failed = added.get(item.series, (0, 0))
        added[item.series] = (runs + 1, failed + int(run["status"] is RunStatus.FAILED))
        record_result(source=run["source"].value, status=run["status"].value)
    count_runs(session=session, added=added)
    # The overview's newest points and last nightly run of each series, once for the batch.
    note_stored_runs(session=session, run_ids=[item.run_id for item in stored if item.run_id is not None])


def _insert_all(*, session: Session, new_runs: Sequence[_NewRun]) -> list[BatchItem]:
    """The new runs, their stages, artifacts and outputs, in one multi-row statement per table."""
    if not new_runs:
        return []
    runs, stage_table, artifact_table = (Base.metadata.tables[name] for name in _TABLES)
    ids = session.scalars(
        insert(runs).returning(runs.c.id, sort_by_parameter_order=True),
        [new.rows.run for new in new_runs],
    ).all()
    stages = [
        {**stage, "run_id": run_id}
        for new, run_id in zip(new_runs, ids, strict=True)
        for stage in new.rows.stages
    ]
    if stages:
        session.execute(insert(stage_table), stages)
    session.execute(
        insert(artifact_table),
        [{**new.rows.artifacts, "run_id": run_id} for new, run_id in zip(new_runs, ids, strict=True)],
    )
    outputs = {
        run_id: new.rows.output
        for new, run_id in zip(new_runs, ids, strict=True)
        if new.rows.output is not None
    }
    insert_outputs(session, outputs)  # references checked to decode when the rows were built
    return [_stored(new, run_id) for new, run_id in zip(new_runs, ids, strict=True)]


def _insert_alone(*, session: Session, new: _NewRun) -> BatchItem:
    """One new run in its own savepoint: stored, or the run a concurrent upload stored under its key."""
    try:
        with session.begin_nested():
            [stored] = _insert_all(session=session, new_runs=[new])
    except IntegrityError:
        try:
            existing = find_by_key(session=session, key=new.key, result=new.result)
        except PerftrackError as error:  # stored concurrently, for another payload
            return refused(new.index, error)
        if existing is None:
            raise
        return BatchItem(
            index=new.index, outcome=BatchOutcome.DUPLICATE, run_id=existing.id, warnings=new.warnings
        )
    return stored


def _stored(new: _NewRun, run_id: int) -> BatchItem:
    run = new.rows.run
    return BatchItem(
        index=new.index,
        outcome=BatchOutcome.STORED,
        run_id=run_id,
        warnings=new.warnings,
        series=(run["case_id"], run["hardware_kind_id"]),
        plain=new.plain,
    )


def _repeat(index: int, first: BatchItem, digest: str, *, first_new: _NewRun) -> BatchItem:
    """An item whose key an earlier item of the batch brought: what storing it after that one gives."""
    if first.run_id is None:
        return refused(index, first.error or InvalidInput("idempotency_key", "refused with an earlier item"))
    if digest != first_new.digest:
        return refused(index, key_reused(first_new.key, first.run_id))
    return BatchItem(index=index, outcome=BatchOutcome.DUPLICATE, run_id=first.run_id)


def _stored_keys(*, session: Session, keys: set[str]) -> dict[str, tuple[int, str]]:
    """Run id and payload digest of every key in ``keys`` already stored, in one query."""
    if not keys:
        return {}
    rows = session.execute(
        select(Run.idempotency_key, Run.id, Run.payload_digest).where(Run.idempotency_key.in_(sorted(keys)))
    )
    return {key: (run_id, digest) for key, run_id, digest in rows}


def lock_jobs(*, session: Session, job_ids: Sequence[int]) -> None:
    """Lock the jobs of a runner's batch in one ``SELECT ... FOR UPDATE``, in id order (so two
    batches never wait on each other in a circle); each attempt's lease is then checked alone."""
    if job_ids:
        session.scalars(
            select(Job.id).where(Job.id.in_(sorted(set(job_ids)))).order_by(Job.id).with_for_update()
        ).all()
