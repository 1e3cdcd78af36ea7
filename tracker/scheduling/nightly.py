"""One firing of a nightly schedule: resolve the branch head, queue every case × hardware, record it.

Idempotent: a second fire for the same head queues nothing new (jobs are unique per candidate,
case, hardware and reason, and a series already measured on that commit is skipped), and a fire
for a ``scheduled_for`` already recorded returns that record. A branch that cannot be resolved
is recorded as the run's error, never raised: the scheduler keeps going.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from tracker.catalog.suites import ResolvedSchedule
from tracker.enums import JobReason, JobState
from tracker.models import Candidate, Case, Commit, HardwareKind, Job, NightlyRun, Repository, Run
from tracker.queue.jobs import enqueue_job
from tracker.vcs.branch_head import (
    BranchResolver,
    BranchUnavailable,
    first_parent_since,
    head_metadata,
    ls_remote_head,
)
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.vcs.history import GitHistory, HistoryUnavailable
from wire import CommitIn


@dataclass
class _Queued:
    queued: int = 0
    existing: int = 0
    series: list[str] = field(default_factory=list)


def fire_nightly(
    *,
    session: Session,
    schedule: ResolvedSchedule,
    now: dt.datetime,
    history: GitHistory | None,
    resolver: BranchResolver = ls_remote_head,
    scheduled_for: dt.datetime | None = None,
) -> NightlyRun:
    """Measure the head of the schedule's branch on its hardware kinds; the stored record says what happened."""
    if scheduled_for is not None:
        recorded = session.scalar(
            select(NightlyRun).where(
                NightlyRun.schedule == schedule.name, NightlyRun.scheduled_for == scheduled_for
            )
        )
        if recorded is not None:
            return recorded  # another leader (or a retry) already fired this one
    run = NightlyRun(
        schedule=schedule.name,
        fired_at=now,
        scheduled_for=scheduled_for,
        branch=schedule.branch,
        backfilled=[],
        details={"suite": schedule.suite, "hardware": list(schedule.hardware)},
    )
    session.add(run)
    repository = session.scalar(select(Repository).where(Repository.name == schedule.repository))
    if repository is None:
        run.error = f"repository {schedule.repository!r} is not known: sync the suites first"
        session.flush()
        return run
    run.repository_id = repository.id
    try:
        head_sha = resolver(repository.url, schedule.branch)
    except BranchUnavailable as error:
        run.error = str(error)
        session.flush()
        return run
    _measure_head(
        session=session, run=run, schedule=schedule, repository=repository, head_sha=head_sha, history=history
    )
    session.flush()
    return run


def _measure_head(
    *,
    session: Session,
    run: NightlyRun,
    schedule: ResolvedSchedule,
    repository: Repository,
    head_sha: str,
    history: GitHistory | None,
) -> None:
    """Queue the branch head's series (and the commits since the last nightly, if it backfills) on ``run``."""
    previous = _previous_commit(session=session, schedule=schedule, repository=repository)
    metadata = head_metadata(history=history, repository=repository, sha=head_sha) if history else None
    commit = upsert_commit(
        session=session,
        repository=repository,
        commit=(metadata or CommitIn(sha=head_sha)).model_copy(update={"branch": schedule.branch}),
        from_repository=True,  # the remote's branch head, and the mirror's metadata
    )
    run.commit_sha = commit.sha
    pairs = _series(session=session, schedule=schedule)
    if not pairs:
        run.error = f"suite {schedule.suite!r} has no current case on {', '.join(schedule.hardware)}"
    head = _queue(session=session, commit=commit, pairs=pairs)
    run.jobs_queued, run.jobs_existing = head.queued, head.existing
    details = dict(run.details or {})
    details["series"] = head.series
    if schedule.backfill_limit and previous is not None and previous != commit.sha and pairs:
        backfilled, note = _backfill(
            session=session,
            schedule=schedule,
            repository=repository,
            since_sha=previous,
            head_sha=commit.sha,
            history=history,
            pairs=pairs,
        )
        run.backfilled = backfilled
        if note:
            details["backfill_note"] = note
    run.details = details


def _previous_commit(*, session: Session, schedule: ResolvedSchedule, repository: Repository) -> str | None:
    """The commit the last successful nightly of this branch measured."""
    return session.scalar(
        select(NightlyRun.commit_sha)
        .where(
            NightlyRun.repository_id == repository.id,
            NightlyRun.branch == schedule.branch,
            NightlyRun.commit_sha.is_not(None),
        )
        .order_by(NightlyRun.fired_at.desc(), NightlyRun.id.desc())
        .limit(1)
    )


def _series(*, session: Session, schedule: ResolvedSchedule) -> list[tuple[Case, HardwareKind]]:
    """Every current case of the suite on each of the schedule's hardware kinds it runs on."""
    cases = session.scalars(
        select(Case).where(Case.suite == schedule.suite, Case.is_current.is_(True)).order_by(Case.slug)
    ).all()
    wanted = set(schedule.hardware)
    return [
        (case, entry.hardware_kind)
        for case in cases
        for entry in sorted(case.hardware, key=lambda entry: entry.hardware_kind.name)
        if entry.hardware_kind.name in wanted
    ]


def _queue(*, session: Session, commit: Commit, pairs: list[tuple[Case, HardwareKind]]) -> _Queued:
    candidate = ensure_candidate(session=session, base=commit, patches=[])
    outcome = _Queued()
    for case, kind in pairs:
        outcome.series.append(f"{case.slug}@{kind.name}")
        if _measured(session=session, candidate=candidate, case=case, kind=kind):
            outcome.existing += 1
            continue
        enqueued = enqueue_job(
            session=session,
            candidate=candidate,
            case=case,
            hardware=kind,
            reason=JobReason.NIGHTLY,
            requested_by="nightly",
        )
        if enqueued.created:
            outcome.queued += 1
        else:
            outcome.existing += 1
    return outcome


def _measured(*, session: Session, candidate: Candidate, case: Case, kind: HardwareKind) -> bool:
    """A run or a live job (any reason) already covers this commit on this series."""
    run = session.scalar(
        select(Run.id)
        .outerjoin(Job, Job.id == Run.job_id)
        .where(
            Run.candidate_id == candidate.id,
            Run.case_id == case.id,
            Run.hardware_kind_id == kind.id,
            or_(Job.id.is_(None), Job.reason != JobReason.EVIDENCE),  # a profiled run measures nothing
        )
        .limit(1)
    )
    if run is not None:
        return True
    job = session.scalar(
        select(Job.id)
        .where(
            Job.candidate_id == candidate.id,
            Job.case_id == case.id,
            Job.hardware_kind_id == kind.id,
            Job.state.in_((JobState.QUEUED, JobState.LEASED, JobState.DONE)),
            Job.reason.not_in((JobReason.NIGHTLY, JobReason.EVIDENCE)),
        )
        .limit(1)
    )
    return job is not None


def _backfill(
    *,
    session: Session,
    schedule: ResolvedSchedule,
    repository: Repository,
    since_sha: str,
    head_sha: str,
    history: GitHistory | None,
    pairs: list[tuple[Case, HardwareKind]],
) -> tuple[list[str], str]:
    """Queue the commits between the last nightly and this head that were never measured."""
    if history is None:
        return [], "no git mirror configured: backfill skipped"
    try:
        commits = first_parent_since(
            history=history,
            repository=repository,
            since_sha=since_sha,
            head_sha=head_sha,
            limit=schedule.backfill_limit,
        )
    except HistoryUnavailable as error:
        return [], f"backfill skipped: {error}"
    backfilled: list[str] = []
    for commit_in in commits:
        commit = upsert_commit(
            session=session,
            repository=repository,
            commit=commit_in.model_copy(update={"branch": schedule.branch}),
            from_repository=True,  # listed from the mirror
        )
        if _queue(session=session, commit=commit, pairs=pairs).queued:
            backfilled.append(commit.sha)
    return backfilled, ""
