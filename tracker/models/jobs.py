"""The job queue: candidate × case × hardware kind, leased by runners."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import Arm, AttemptOutcome, JobReason, JobState
from tracker.models.access import Runner
from tracker.models.base import Base, UTCDateTime, created_at, int_pk, str_enum
from tracker.models.catalog import Case, HardwareKind
from tracker.models.vcs import Candidate


class Job(Base):
    """One benchmark to run: ``queued → leased → done | failed`` (or ``cancelled``).

    ``idempotency_key`` makes enqueueing the same candidate, case, hardware and purpose a no-op.
    ``attempts`` counts leases handed out; ``attempt_history`` keeps each ended attempt's runner,
    outcome and reason, so a job that fails for good says why every time.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_claim", "state", "hardware_kind_id", "priority", "id"),
        Index("ix_jobs_lease_expiry", "state", "lease_expires_at"),
    )

    id: Mapped[int_pk]
    idempotency_key: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"), nullable=False, index=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    num_gpus: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    reason: Mapped[JobReason] = mapped_column(str_enum(JobReason, "job_reason"), nullable=False)
    priority: Mapped[int] = mapped_column(Integer, nullable=False, default=0, comment="higher runs first")
    state: Mapped[JobState] = mapped_column(
        str_enum(JobState, "job_state"), nullable=False, default=JobState.QUEUED
    )
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=3)
    leased_by_runner_id: Mapped[int | None] = mapped_column(ForeignKey("runners.id", ondelete="SET NULL"))
    leased_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    failure_reason: Mapped[str | None] = mapped_column(Text)
    comparison_id: Mapped[int | None] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"), index=True
    )
    comparison_round: Mapped[int | None] = mapped_column(Integer)
    arm: Mapped[Arm | None] = mapped_column(str_enum(Arm, "arm"))
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="SET NULL"), comment="confirm/bisect jobs"
    )
    requested_by: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    created_at: Mapped[created_at]
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    candidate: Mapped[Candidate] = relationship()
    case: Mapped[Case] = relationship()
    hardware_kind: Mapped[HardwareKind] = relationship()
    leased_by: Mapped[Runner | None] = relationship()
    attempt_history: Mapped[list[JobAttempt]] = relationship(
        back_populates="job", cascade="all, delete-orphan", passive_deletes=True, order_by="JobAttempt.number"
    )


class JobAttempt(Base):
    """One lease of a job and how it ended, written when it ends (the current lease has no row yet)."""

    __tablename__ = "job_attempts"
    __table_args__ = (
        UniqueConstraint("job_id", "number"),
        Index("ix_job_attempts_runner", "runner_id", "ended_at"),  # a runner's latest failed attempts
    )

    id: Mapped[int_pk]
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False)
    number: Mapped[int] = mapped_column(Integer, nullable=False, comment="the job's attempt counter, from 1")
    runner_id: Mapped[int | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL"), comment="the runner that held the lease"
    )
    outcome: Mapped[AttemptOutcome] = mapped_column(
        str_enum(AttemptOutcome, "attempt_outcome"), nullable=False
    )
    reason: Mapped[str] = mapped_column(
        Text, nullable=False, default="", server_default="", comment="why it ended without a result"
    )
    started_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when the lease was handed out, UTC (unknown for older attempts)"
    )
    ended_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False)

    job: Mapped[Job] = relationship(back_populates="attempt_history")
    runner: Mapped[Runner | None] = relationship()

    @property
    def runner_name(self) -> str | None:
        """The name of the runner that held the lease (``None``: not known)."""
        return self.runner.name if self.runner is not None else None
