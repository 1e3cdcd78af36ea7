"""Claims: the one statement that leases a job, and whether a runner has anything to wait for.

A claim hands the oldest, highest-priority queued job of the runner's hardware kind (and no more
GPUs than it has) to exactly one runner, in one ``UPDATE ... RETURNING`` statement: on PostgreSQL
the candidate row is locked with ``FOR UPDATE SKIP LOCKED``, so concurrent claimers never wait for
or get the same job; on SQLite the claim runs in one ``BEGIN IMMEDIATE`` transaction. A paired
check's job may be pinned to another runner (see :mod:`tracker.queue.jobs`).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ColumnElement, Update, bindparam, exists, or_, select, update
from sqlalchemy.orm import Session, aliased, joinedload
from sqlalchemy.orm.util import AliasedClass

from tracker.enums import JobState
from tracker.models import Candidate, Case, Commit, Comparison, Job, Runner, utcnow
from tracker.queue.jobs import DEFAULT_LEASE, PIN_STALE_AFTER, PINNED_KINDS

# How precisely a claim records when its runner was last heard from (online status: 2 minutes;
# a pinned check's staleness: 30 minutes).
HEARD_PRECISION = dt.timedelta(seconds=5)


def _fits_runner(job: type[Job] | AliasedClass[Job]) -> list[ColumnElement[bool]]:
    """A queued job of the runner's kind needing no more GPUs than it has (``p_kind``, ``p_gpus``):
    what the lease takes and what a waiting claim looks for, alike."""
    return [
        job.state == JobState.QUEUED,
        job.hardware_kind_id == bindparam("p_kind"),
        job.num_gpus <= bindparam("p_gpus"),
    ]


def _lease_statement() -> Update:
    """``UPDATE jobs ... WHERE id = (next job for the runner, locked, skipping locked) RETURNING``.

    Built once (its parameters are bound per claim), so a claim costs no statement building, and
    its cache key is computed once (as for the other statements a claim runs, below).
    """
    candidate = aliased(Job)
    pinned_elsewhere = exists(
        select(Comparison.id)
        .join(Runner, Runner.id == Comparison.runner_id)
        .where(
            Comparison.id == candidate.comparison_id,
            Comparison.runner_id != bindparam("p_runner"),
            Runner.last_heartbeat_at > bindparam("p_stale_before"),
        )
    )
    next_job = (
        select(candidate.id)
        .where(*_fits_runner(candidate), or_(candidate.comparison_id.is_(None), ~pinned_elsewhere))
        .order_by(candidate.priority.desc(), candidate.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return (
        update(Job)
        .where(Job.id == next_job, Job.state == JobState.QUEUED)
        .values(
            state=JobState.LEASED,
            attempts=Job.attempts + 1,
            leased_by_runner_id=bindparam("p_runner"),
            leased_at=bindparam("p_now"),
            lease_expires_at=bindparam("p_expires"),
        )
        .returning(Job.id, Job.comparison_id)
        .execution_options(synchronize_session=False)
    )


_LEASE = _lease_statement()
# What the claim answer shows, in one query rather than one lazy load per relation (a candidate's
# few patches joined too: a second query would be a round trip more per claim). A case's
# per-hardware thresholds (selectin by default) are not part of the answer: left unloaded.
_ANSWER = (
    select(Job)
    .where(Job.id == bindparam("p_job"))
    .options(
        joinedload(Job.case).lazyload(Case.hardware),
        joinedload(Job.hardware_kind),
        joinedload(Job.candidate).joinedload(Candidate.base_commit).joinedload(Commit.repository),
        joinedload(Job.candidate).joinedload(Candidate.patches),
    )
    .execution_options(populate_existing=True)
)
_CLAIMABLE = select(Job.id).where(*_fits_runner(Job)).limit(1)


def claim_job(
    *, session: Session, runner: Runner, lease: dt.timedelta = DEFAULT_LEASE, now: dt.datetime | None = None
) -> Job | None:
    """Lease the next job this runner can run, or ``None`` when there is none.

    One statement takes the job (:data:`_LEASE`): on PostgreSQL concurrent claimers skip each
    other's row (``FOR UPDATE SKIP LOCKED``) instead of waiting for it. Leases that ran out are not
    looked at here: the scheduler expires them (:func:`tracker.workflows.jobs.expire`), off the
    claim path.
    """
    now = now or utcnow()
    last = runner.last_heartbeat_at
    if last is None or abs(now - last) >= HEARD_PRECISION:
        runner.last_heartbeat_at = now  # not on every claim: a runner polling hard need not write each time
    session.flush()
    # On the session's connection, as plain SQL: the ORM's bulk-update bookkeeping has nothing to
    # do for a statement that synchronises no loaded object.
    taken = (
        session.connection()
        .execute(
            _LEASE,
            {
                "p_runner": runner.id,
                "p_kind": runner.hardware_kind_id,
                "p_gpus": runner.gpu_count,
                "p_stale_before": now - PIN_STALE_AFTER,
                "p_now": now,
                "p_expires": now + lease,
            },
        )
        .first()
    )
    if taken is None:
        return None
    job_id, comparison_id = taken
    if comparison_id is not None:
        _pin(session=session, comparison_id=comparison_id, runner=runner)
    session.flush()
    return session.scalars(_ANSWER, {"p_job": job_id}).unique().one()


def claimable(*, session: Session, hardware_kind_id: int, gpu_count: int) -> bool:
    """Whether a queued job of this kind needing at most ``gpu_count`` GPUs waits (read-only; a claim
    may still find it pinned to another runner, or taken)."""
    found = session.scalar(_CLAIMABLE, {"p_kind": hardware_kind_id, "p_gpus": gpu_count})
    return found is not None


def _pin(*, session: Session, comparison_id: int, runner: Runner) -> None:
    """Pin a paired check to the runner that claims its first arm (or takes it over)."""
    comparison = session.scalar(select(Comparison).where(Comparison.id == comparison_id).with_for_update())
    if comparison is not None and comparison.kind in PINNED_KINDS and comparison.runner_id != runner.id:
        comparison.runner_id = runner.id
