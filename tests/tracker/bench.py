"""A simulated GPU runner for detection tests: nightly jobs, a queue drained with planted values.

After each upload the bench does what the upload route leaves for after its answer
(``web/followups.py``), with the production functions themselves: queued bisections start
(:func:`tracker.workflows.bisections.start_queued`) and the evidence runs uploads linked are read
(:func:`tracker.workflows.evidence_reading.summarize_pending`), each in transactions of its own
nested in the bench's (:func:`sessions_beside`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from tests.factories import job_result
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.enums import JobReason
from tracker.ingest.results import IngestLimits
from tracker.models import Commit, Job
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.settings import CulpritTelling
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.vcs.history import GitHistory
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.bisections import start_queued
from tracker.workflows.evidence_reading import summarize_pending
from tracker.workflows.results import store_job_result
from wire import CommitIn

T0 = dt.datetime(2026, 5, 1, 2, 0, tzinfo=dt.UTC)
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
# A benchmark outcome: the value (ms per step) a commit measures at, or a failed run: None, or the
# failure's reason.
Measure = Callable[[Commit, Job], float | str | None]


def sessions_beside(session: Session) -> sessionmaker[Session]:
    """Sessions inside ``session``'s transaction, as the ``sessions`` fixture makes them: each commit
    is a savepoint of it, so the service's own transactions see the bench's work, and it theirs."""
    return sessionmaker(
        bind=session.connection(), join_transaction_mode="create_savepoint", expire_on_commit=False
    )


class Bench:
    """One runner of a hardware kind measuring one case; time moves a minute per job."""

    def __init__(
        self,
        session: Session,
        *,
        case: str = "qwen-image-t2i-1024",
        hardware: str = "H200",
        history: GitHistory | None = None,
        runner: str = "h200-sim",
        steps: Callable[[float], list[float]] | None = None,
        telling: CulpritTelling | None = None,
    ) -> None:
        self.session = session
        self.telling = telling  # whether culprits' pull requests are told (None: as without GitHub)
        self.case = get_current_case(session=session, slug=case)
        self.kind = get_hardware_kind(session=session, name=hardware)
        self.history = history
        self.steps = steps or (lambda value: [value] * 5)
        self.now = T0
        self.runner = register_runner(
            session=session,
            name=runner,
            hardware=self.kind,
            gpu_count=8,
            labels={},
            version="t",
            host="sim",
            token=None,
            now=self.now,
        )
        self.ran: list[Job] = []

    def commit(self, commit: CommitIn) -> Commit:
        """Store a commit of the case's repository."""
        assert self.case.repository is not None
        return upsert_commit(session=self.session, repository=self.case.repository, commit=commit)

    def nightly(self, commit: CommitIn) -> Job:
        """Queue the nightly job of a commit."""
        stored = self.commit(commit)
        candidate = ensure_candidate(session=self.session, base=stored, patches=[])
        return enqueue_job(
            session=self.session,
            candidate=candidate,
            case=self.case,
            hardware=self.kind,
            reason=JobReason.NIGHTLY,
        ).job

    def drain(self, measure: Measure, limit: int = 200) -> list[Job]:
        """Run every queued job (highest priority first), uploading what ``measure`` says."""
        done: list[Job] = []
        for _ in range(limit):
            self.now += dt.timedelta(minutes=1)
            job = workflow_jobs.claim(session=self.session, runner=self.runner, now=self.now)
            if job is None:
                return done
            value = measure(job.candidate.base_commit, job)
            if value is None or isinstance(value, str):
                reason = value or "build failed: conflict"
                result = job_result(job.attempts, status="failed", failure_reason=reason)
            else:
                result = job_result(job.attempts, step_times_ms=self.steps(value))
            store_job_result(
                session=self.session,
                runner=self.runner,
                job_id=job.id,
                result=result,
                limits=LIMITS,
                now=self.now,
                telling=self.telling,
            )
            self.follow_ups()
            done.append(job)
            self.ran.append(job)
        raise AssertionError(f"the queue did not drain within {limit} jobs")

    def follow_ups(self) -> None:
        """What the upload route leaves for after its answer, at the bench's time: start the queued
        bisections (git runs with no session open), read the evidence runs uploads linked."""
        self.session.flush()  # what the bench's session did is seen by the service's sessions
        sessions = sessions_beside(self.session)
        start_queued(sessions=sessions, history=self.history, clock=lambda: self.now)
        summarize_pending(sessions=sessions, clock=lambda: self.now, telling=self.telling)
        self.session.expire_all()  # and what they did is seen by the bench's session
