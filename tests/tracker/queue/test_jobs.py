"""The job queue: idempotent enqueue, leases, expiry, retries, uploads per attempt, concurrency."""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tests.factories import job_result
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import create_comparison
from tracker.enums import ComparisonKind, JobReason, JobState, RunStatus
from tracker.errors import Conflict
from tracker.ingest.results import IngestLimits
from tracker.models import Candidate, Job, Run, Runner
from tracker.queue.jobs import PRIORITY, enqueue_job, heartbeat, release_job
from tracker.queue.runners import register_runner
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result
from wire import CommitIn

pytestmark = pytest.mark.dialect

T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
LEASE = dt.timedelta(minutes=5)
T1 = T0 + dt.timedelta(minutes=8)  # inside attempt 2's lease
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)


def candidate(session: Session, sha: str = "aaaaaaa", patches: list[str] | None = None) -> Candidate:
    case = get_current_case(session=session, slug="qwen-image-t2i-1024")
    assert case.repository is not None
    commit = upsert_commit(session=session, repository=case.repository, commit=CommitIn(sha=sha))
    return ensure_candidate(session=session, base=commit, patches=patches or [])


def runner(session: Session, name: str = "h200-a", hardware: str = "H200", gpus: int = 8) -> Runner:
    kind = get_hardware_kind(session=session, name=hardware)
    return register_runner(
        session=session,
        name=name,
        hardware=kind,
        gpu_count=gpus,
        labels={},
        version="t",
        host="h",
        token=None,
        now=T0,
    )


def enqueue(
    session: Session, slug: str = "qwen-image-t2i-1024", sha: str = "aaaaaaa", **kwargs: object
) -> Job:
    case = get_current_case(session=session, slug=slug)
    kind = get_hardware_kind(session=session, name=case.hardware_names[0])
    return enqueue_job(
        session=session,
        candidate=candidate(session, sha),
        case=case,
        hardware=kind,
        reason=JobReason.NIGHTLY,
        **kwargs,
    ).job


def test_enqueue_is_idempotent_per_purpose(session: Session) -> None:
    first = enqueue(session)
    again = enqueue(session)
    assert first.id == again.id
    other = enqueue(session, purpose="round-2")
    assert other.id != first.id


def test_claim_matches_hardware_and_gpu_count(session: Session) -> None:
    wan = enqueue(session, slug="wan2.2-t2v-a14b")  # 8 GPUs, H200
    qwen = enqueue(session, slug="qwen-image-t2i-1024")  # 1 GPU, H200
    gb300 = runner(session, name="gb300", hardware="GB300", gpus=4)
    small = runner(session, name="small", gpus=2)
    big = runner(session, name="big", gpus=8)
    assert workflow_jobs.claim(session=session, runner=gb300, now=T0) is None
    assert workflow_jobs.claim(session=session, runner=small, now=T0) is qwen
    assert (
        workflow_jobs.claim(session=session, runner=small, now=T0) is None
    )  # the 8-GPU job is too big for it
    assert workflow_jobs.claim(session=session, runner=big, now=T0) is wan


def test_priority_then_age(session: Session) -> None:
    low = enqueue(session, sha="1111111")
    high = enqueue(session, sha="2222222", priority=10)
    agent = runner(session)
    assert workflow_jobs.claim(session=session, runner=agent, now=T0) is high
    assert workflow_jobs.claim(session=session, runner=agent, now=T0) is low


def test_expired_lease_requeues_then_fails_with_every_reason(session: Session) -> None:
    job = enqueue(session, max_attempts=2)
    first, second = runner(session, name="one"), runner(session, name="two")
    assert workflow_jobs.claim(session=session, runner=first, lease=LEASE, now=T0) is job
    assert job.attempts == 1
    heartbeat(
        session=session, runner=first, job_id=job.id, attempt=1, lease=LEASE, now=T0 + dt.timedelta(minutes=4)
    )
    assert (
        workflow_jobs.expire(session=session, now=T0 + dt.timedelta(minutes=8)) == []
    )  # the heartbeat extended it
    workflow_jobs.expire(session=session, now=T0 + dt.timedelta(minutes=10))
    assert job.state is JobState.QUEUED
    assert (
        workflow_jobs.claim(session=session, runner=second, lease=LEASE, now=T0 + dt.timedelta(minutes=11))
        is job
    )
    assert job.attempts == 2
    workflow_jobs.expire(session=session, now=T0 + dt.timedelta(minutes=20))
    assert job.state is JobState.FAILED
    assert job.failure_reason is not None
    assert "attempt 1: lease expired" in job.failure_reason
    assert "attempt 2: lease expired" in job.failure_reason
    assert [entry.runner_name for entry in job.attempt_history] == ["one", "two"]


def test_upload_is_per_attempt_idempotent_and_late_uploads_are_refused(session: Session) -> None:
    job = enqueue(session)
    first, second = runner(session, name="one"), runner(session, name="two")
    workflow_jobs.claim(session=session, runner=first, lease=LEASE, now=T0)
    workflow_jobs.expire(session=session, now=T0 + dt.timedelta(minutes=6))
    workflow_jobs.claim(session=session, runner=second, lease=LEASE, now=T0 + dt.timedelta(minutes=7))
    # Attempt 1 wakes up and uploads: refused, and nothing is stored.
    with pytest.raises(Conflict, match="attempt 1"):
        store_job_result(
            session=session, runner=first, job_id=job.id, result=job_result(attempt=1), limits=LIMITS, now=T1
        )
    assert session.scalar(select(Run).where(Run.job_id == job.id)) is None
    # Attempt 2 uploads twice: stored once.
    stored = store_job_result(
        session=session, runner=second, job_id=job.id, result=job_result(attempt=2), limits=LIMITS, now=T1
    )
    again = store_job_result(
        session=session, runner=second, job_id=job.id, result=job_result(attempt=2), limits=LIMITS, now=T1
    )
    assert stored.created
    assert not again.created
    assert stored.run.id == again.run.id
    assert job.state is JobState.DONE
    assert session.scalars(select(Run).where(Run.job_id == job.id)).all() == [stored.run]
    # Attempt 1 again, now that the job is done: still refused, the stored run untouched.
    with pytest.raises(Conflict):
        store_job_result(
            session=session, runner=first, job_id=job.id, result=job_result(attempt=1), limits=LIMITS, now=T1
        )


def test_failed_run_fails_the_job_with_its_reason(session: Session) -> None:
    job = enqueue(session)
    agent = runner(session)
    workflow_jobs.claim(session=session, runner=agent, now=T0)
    result = job_result(
        attempt=1, status="failed", failure_reason="patch #102 does not apply on base aaaaaaa"
    )
    outcome = store_job_result(
        session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0
    )
    assert outcome.run.status is RunStatus.FAILED
    assert job.state is JobState.FAILED
    assert job.failure_reason == "patch #102 does not apply on base aaaaaaa"


def test_release_returns_the_job_without_using_an_attempt(session: Session) -> None:
    job = enqueue(session, max_attempts=1)
    agent = runner(session)
    workflow_jobs.claim(session=session, runner=agent, now=T0)
    release_job(session=session, runner=agent, job_id=job.id, attempt=1, reason="SIGTERM", now=T0)
    assert job.state is JobState.QUEUED
    again = workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert again is job
    assert job.attempts == 2
    assert job.max_attempts == 2


def _claim_all(engine: Engine, claimers: int, jobs: int, db_url: str) -> Counter[int]:
    """``claimers`` threads, each with its own connection, claim until the queue is empty."""
    sessions = db.make_session_factory(engine)
    with db.session_scope(sessions) as session:
        for index in range(jobs):
            enqueue(session, sha=f"{0xC0000 + index:07x}", purpose=f"race-{db_url[:4]}")
        names = [runner(session, name=f"racer-{index}").name for index in range(claimers)]
    claimed: Counter[int] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            while True:
                with db.session_scope(sessions) as session:
                    agent = session.scalar(select(Runner).where(Runner.name == name))
                    assert agent is not None
                    job = workflow_jobs.claim(session=session, runner=agent)
                    if job is None:
                        return
                    with lock:
                        claimed[job.id] += 1
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    return claimed


def test_concurrent_claimers_never_share_a_job(migrated_db_url: str) -> None:
    from tests.conftest import SUITES
    from tracker.catalog.cases import sync_suites
    from tracker.catalog.suites import load_suites

    engine = (
        db.make_engine(migrated_db_url, pool_size=20, max_overflow=20)
        if migrated_db_url.startswith("postgres")
        else db.make_engine(migrated_db_url)
    )
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
        claimers = 16 if migrated_db_url.startswith("postgres") else 8
        claimed = _claim_all(engine, claimers=claimers, jobs=120, db_url=migrated_db_url)
        assert len(claimed) == 120
        assert set(claimed.values()) == {1}
    finally:
        engine.dispose()


def test_a_job_takes_its_reasons_priority_unless_given_one(session: Session) -> None:
    case = get_current_case(session=session, slug="qwen-image-t2i-1024")
    kind = get_hardware_kind(session=session, name=case.hardware_names[0])
    queued = {
        reason: enqueue_job(
            session=session, candidate=candidate(session, "bbbbbbb"), case=case, hardware=kind, reason=reason
        ).job
        for reason in JobReason
    }
    assert {reason: job.priority for reason, job in queued.items()} == PRIORITY
    explicit = enqueue_job(
        session=session,
        candidate=candidate(session, "ccccccc"),
        case=case,
        hardware=kind,
        reason=JobReason.CONFIRM,
        priority=-3,
    ).job
    assert explicit.priority == -3


def test_a_paired_check_runs_every_round_on_the_runner_that_took_its_first_arm(session: Session) -> None:
    first, second = runner(session, "h200-a"), runner(session, "h200-b")
    comparison = create_comparison(
        session=session,
        base=candidate(session, "aaaaaaa"),
        head=candidate(session, "bbbbbbb"),
        cases=["qwen-image-t2i-1024"],
        hardware=["H200"],
        rounds=2,
        requests_per_round=1,
        purpose=ComparisonKind.CONFIRMATION,
    )
    taken = workflow_jobs.claim(session=session, runner=first, lease=LEASE, now=T0)
    assert taken is not None
    assert taken.comparison_id == comparison.id
    assert comparison.runner_id == first.id
    # The other runner leaves the rest of the rounds alone while the first one is alive ...
    assert (
        workflow_jobs.claim(session=session, runner=second, lease=LEASE, now=T0 + dt.timedelta(minutes=1))
        is None
    )
    again = workflow_jobs.claim(session=session, runner=first, lease=LEASE, now=T0 + dt.timedelta(minutes=2))
    assert again is not None
    assert again.comparison_id == comparison.id
    # ... and takes over once it has been silent for long.
    later = T0 + dt.timedelta(hours=1)
    took_over = workflow_jobs.claim(session=session, runner=second, lease=LEASE, now=later)
    assert took_over is not None
    assert took_over.comparison_id == comparison.id
    assert comparison.runner_id == second.id


def test_pull_request_comparisons_are_not_pinned(session: Session) -> None:
    first, second = runner(session, "h200-a"), runner(session, "h200-b")
    comparison = create_comparison(
        session=session,
        base=candidate(session, "aaaaaaa"),
        head=candidate(session, "bbbbbbb"),
        cases=["qwen-image-t2i-1024"],
        hardware=["H200"],
        rounds=1,
        requests_per_round=1,
    )
    assert workflow_jobs.claim(session=session, runner=first, lease=LEASE, now=T0) is not None
    assert workflow_jobs.claim(session=session, runner=second, lease=LEASE, now=T0) is not None
    assert comparison.runner_id is None
