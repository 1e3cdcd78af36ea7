"""Alerts (changes found on a series), bisections and PR A/B comparisons."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import (
    AlertConfirmation,
    AlertStatus,
    BisectionOutcome,
    BisectionState,
    ComparisonKind,
    ComparisonState,
    Direction,
    Metric,
    OutputStatus,
    Verdict,
)
from tracker.models.base import Base, UTCDateTime, created_at, int_pk, json_dict, str_enum
from tracker.models.catalog import Case, HardwareKind, Repository
from tracker.models.vcs import Candidate, Commit


class Alert(Base):
    """A change on one series (case × hardware × metric) between two commits.

    Unique per series and first bad commit, so a sweep never raises the same change twice.
    ``culprit_commit_id`` is set once bisection has narrowed the range to one commit.
    """

    __tablename__ = "alerts"
    __table_args__ = (
        UniqueConstraint("case_id", "hardware_kind_id", "metric", "first_bad_commit_id"),
        Index("ix_alerts_status", "status", "created_at"),
    )

    id: Mapped[int_pk]
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    metric: Mapped[Metric] = mapped_column(str_enum(Metric, "metric"), nullable=False)
    direction: Mapped[Direction] = mapped_column(str_enum(Direction, "direction"), nullable=False)
    status: Mapped[AlertStatus] = mapped_column(
        str_enum(AlertStatus, "alert_status"), nullable=False, default=AlertStatus.OPEN
    )
    last_good_commit_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    first_bad_commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"), nullable=False)
    culprit_commit_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    fixed_by_commit_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    before_value: Mapped[float] = mapped_column(Float, nullable=False)
    after_value: Mapped[float] = mapped_column(Float, nullable=False)
    change_pct: Mapped[float] = mapped_column(Float, nullable=False)
    threshold_pct: Mapped[float] = mapped_column(Float, nullable=False, comment="threshold that applied")
    noise_pct: Mapped[float | None] = mapped_column(
        Float, comment="series run-to-run noise, % (None: unknown)"
    )
    p_value: Mapped[float | None] = mapped_column(Float)
    single_run_basis: Mapped[bool] = mapped_column(
        Boolean, nullable=False, default=False, comment="rests on single runs without a noise estimate"
    )
    confirmation: Mapped[AlertConfirmation] = mapped_column(
        str_enum(AlertConfirmation, "alert_confirmation"),
        nullable=False,
        default=AlertConfirmation.NOT_NEEDED,
        server_default=AlertConfirmation.NOT_NEEDED.value,
        comment="pending, confirmed (paired rounds), held (later runs held), refuted, too_noisy, not_possible",
    )
    bisection_state: Mapped[BisectionState | None] = mapped_column(
        str_enum(BisectionState, "bisection_state"),
        comment="queued (range to list), not_needed (adjacent), running, found, gave_up, unavailable; null: not started",
    )
    bisection_listing_since: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="when a tracker process took the queued range to list from git"
    )
    evidence: Mapped[json_dict] = mapped_column(
        comment="how the change was found: method, z, noise, windows, threshold source, outlier runs"
    )
    output_psnr_db: Mapped[float | None] = mapped_column(
        Float, comment="output alerts: lowest PSNR of the first bad commit's output against the last good's"
    )
    output_ssim: Mapped[float | None] = mapped_column(
        Float, comment="output alerts: lowest SSIM, same frames"
    )
    group_id: Mapped[int | None] = mapped_column(
        ForeignKey("alert_groups.id", ondelete="SET NULL"),
        index=True,
        comment="NULL: a suspect, not grouped",
    )
    confirmed_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="UTC, first seen confirmed in a group; NULL: not yet (told once per group)"
    )
    created_at: Mapped[created_at]
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    case: Mapped[Case] = relationship()
    hardware_kind: Mapped[HardwareKind] = relationship()
    group: Mapped[AlertGroup | None] = relationship(back_populates="alerts")
    last_good_commit: Mapped[Commit | None] = relationship(foreign_keys=[last_good_commit_id])
    first_bad_commit: Mapped[Commit] = relationship(foreign_keys=[first_bad_commit_id])
    culprit_commit: Mapped[Commit | None] = relationship(foreign_keys=[culprit_commit_id])
    fixed_by_commit: Mapped[Commit | None] = relationship(foreign_keys=[fixed_by_commit_id])
    events: Mapped[list[AlertEvent]] = relationship(
        back_populates="alert", cascade="all, delete-orphan", order_by="AlertEvent.id"
    )
    bisection_steps: Mapped[list[BisectionStep]] = relationship(
        back_populates="alert", cascade="all, delete-orphan", order_by="BisectionStep.position"
    )


class AlertGroup(Base):
    """Alerts of one repository that one commit range moved, triaged once (docs/groups.md).

    Keyed by ``culprit_commit_id`` once bisection names one; before that by the range
    (``last_good_commit_id``, ``first_bad_commit_id``] every alert of it overlaps. Its state is
    derived from its alerts'. A group whose alerts all moved to their culprit's group keeps its
    row and id with ``merged_into_id`` set.
    """

    __tablename__ = "alert_groups"

    id: Mapped[int_pk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), nullable=False, index=True)
    culprit_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id"), comment="named by bisection; NULL: a range"
    )
    last_good_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id"), comment="range: exclusive low end"
    )
    first_bad_commit_id: Mapped[int] = mapped_column(
        ForeignKey("commits.id"), nullable=False, comment="range: inclusive high end"
    )
    assignee: Mapped[str] = mapped_column(
        String(255), nullable=False, default="", server_default="", comment="who"
    )
    issue_url: Mapped[str | None] = mapped_column(String(512), comment="a linked issue or PR")
    merged_into_id: Mapped[int | None] = mapped_column(
        ForeignKey("alert_groups.id", ondelete="SET NULL"), comment="the group its alerts moved to"
    )
    github_comment_id: Mapped[int | None] = mapped_column(
        BigInteger, comment="the bot's comment on the culprit's pull request, edited as the group grows"
    )
    # When each group event happened, and so was told (docs/notifications.md): set once, never cleared.
    confirmed_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="UTC, group.confirmed told; NULL: not yet"
    )
    culprit_named_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="UTC, group.culprit told; NULL: not yet"
    )
    fixed_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="UTC, group.fixed told; NULL: not yet"
    )
    created_at: Mapped[created_at]
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    repository: Mapped[Repository] = relationship()
    culprit_commit: Mapped[Commit | None] = relationship(foreign_keys=[culprit_commit_id])
    last_good_commit: Mapped[Commit | None] = relationship(foreign_keys=[last_good_commit_id])
    first_bad_commit: Mapped[Commit] = relationship(foreign_keys=[first_bad_commit_id])
    merged_into: Mapped[AlertGroup | None] = relationship(remote_side="AlertGroup.id")
    alerts: Mapped[list[Alert]] = relationship(back_populates="group", order_by="Alert.id")


class AlertEvent(Base):
    """One status change of an alert: who, when, why."""

    __tablename__ = "alert_events"

    id: Mapped[int_pk]
    alert_id: Mapped[int] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), nullable=False, index=True
    )
    from_status: Mapped[AlertStatus | None] = mapped_column(str_enum(AlertStatus, "from_status"))
    to_status: Mapped[AlertStatus] = mapped_column(str_enum(AlertStatus, "to_status"), nullable=False)
    actor: Mapped[str] = mapped_column(String(255), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    created_at: Mapped[created_at]

    alert: Mapped[Alert] = relationship(back_populates="events")


class BisectionStep(Base):
    """One commit measured while bisecting an alert's range, and what it showed."""

    __tablename__ = "bisection_steps"
    __table_args__ = (UniqueConstraint("alert_id", "position"),)

    id: Mapped[int_pk]
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"), nullable=False)
    value: Mapped[float | None] = mapped_column(Float)
    outcome: Mapped[BisectionOutcome] = mapped_column(
        str_enum(BisectionOutcome, "bisection_outcome"), nullable=False, comment="pending, good, bad, skipped"
    )
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    comparison_id: Mapped[int | None] = mapped_column(
        ForeignKey("comparisons.id", ondelete="SET NULL"),
        comment="paired rounds against the last good commit, when one run could not call the step",
    )
    note: Mapped[str] = mapped_column(Text, nullable=False, default="", server_default="")
    created_at: Mapped[created_at]

    alert: Mapped[Alert] = relationship(back_populates="bisection_steps")
    commit: Mapped[Commit] = relationship()


class Comparison(Base):
    """A/B comparison of two candidates over cases × hardware, run as interleaved rounds."""

    __tablename__ = "comparisons"

    id: Mapped[int_pk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), nullable=False)
    base_candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"), nullable=False)
    head_candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"), nullable=False)
    state: Mapped[ComparisonState] = mapped_column(
        str_enum(ComparisonState, "comparison_state"), nullable=False, default=ComparisonState.PENDING
    )
    rounds: Mapped[int] = mapped_column(Integer, nullable=False, default=2, comment="rounds asked for")
    rounds_scheduled: Mapped[int] = mapped_column(
        Integer, nullable=False, default=0, server_default="0", comment="rounds whose jobs exist"
    )
    max_rounds: Mapped[int] = mapped_column(
        Integer, nullable=False, default=8, comment="cap when inconclusive"
    )
    requests_per_round: Mapped[int] = mapped_column(Integer, nullable=False, default=5)
    pr_number: Mapped[int | None] = mapped_column(Integer)
    pr_url: Mapped[str | None] = mapped_column(String(512))
    command: Mapped[str] = mapped_column(Text, nullable=False, default="", comment="e.g. the /perf comment")
    case_selection: Mapped[str] = mapped_column(
        Text, nullable=False, default="", server_default="", comment="how the cases were chosen, for people"
    )
    requested_by: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    github_comment_id: Mapped[int | None] = mapped_column(BigInteger, comment="the bot's one comment")
    github_repository: Mapped[str | None] = mapped_column(String(255), comment="owner/name of the PR")
    head_sha: Mapped[str | None] = mapped_column(String(40), comment="PR head the comparison measured")
    github_check_run_id: Mapped[int | None] = mapped_column(
        BigInteger, comment="the check run on the head (App mode), created once and edited"
    )
    reruns_stopped_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime(), comment="/perf cancel after it ended: pushes re-run nothing until the next /perf"
    )
    kind: Mapped[ComparisonKind] = mapped_column(
        str_enum(ComparisonKind, "comparison_kind"),
        nullable=False,
        default=ComparisonKind.PR,
        server_default=ComparisonKind.PR.value,
    )
    alert_id: Mapped[int | None] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"),
        index=True,
        comment="the alert a confirmation or bisection step decides",
    )
    runner_id: Mapped[int | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL"),
        comment="the one runner a confirmation's or bisection step's rounds run on (set by the first claim)",
    )
    created_at: Mapped[created_at]
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    repository: Mapped[Repository] = relationship()
    base_candidate: Mapped[Candidate] = relationship(foreign_keys=[base_candidate_id])
    head_candidate: Mapped[Candidate] = relationship(foreign_keys=[head_candidate_id])
    results: Mapped[list[ComparisonResult]] = relationship(
        back_populates="comparison", cascade="all, delete-orphan", order_by="ComparisonResult.id"
    )


class ComparisonResult(Base):
    """The verdict of a comparison for one case on one hardware kind."""

    __tablename__ = "comparison_results"
    __table_args__ = (UniqueConstraint("comparison_id", "case_id", "hardware_kind_id"),)

    id: Mapped[int_pk]
    comparison_id: Mapped[int] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"), nullable=False
    )
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    verdict: Mapped[Verdict] = mapped_column(
        str_enum(Verdict, "verdict"), nullable=False, default=Verdict.PENDING
    )
    base_value: Mapped[float | None] = mapped_column(Float, comment="ms per denoise step")
    head_value: Mapped[float | None] = mapped_column(Float)
    change_pct: Mapped[float | None] = mapped_column(Float)
    ci_low_pct: Mapped[float | None] = mapped_column(Float, comment="95 % CI of change_pct")
    ci_high_pct: Mapped[float | None] = mapped_column(Float)
    rounds_done: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    rounds_failed: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    threshold_pct: Mapped[float | None] = mapped_column(Float, comment="threshold that applied, %")
    threshold_source: Mapped[str | None] = mapped_column(String(16), comment="model or calibration")
    round_noise_pct: Mapped[float | None] = mapped_column(Float, comment="per-arm noise the CI used, %")
    dof: Mapped[int | None] = mapped_column(Integer, comment="degrees of freedom of the CI")
    note: Mapped[str] = mapped_column(Text, nullable=False, default="")
    output_status: Mapped[OutputStatus | None] = mapped_column(
        str_enum(OutputStatus, "output_status"),
        comment="head's seeded output against base's; null: not checked",
    )
    output_psnr_db: Mapped[float | None] = mapped_column(
        Float, comment="lowest PSNR over the compared frames"
    )
    output_ssim: Mapped[float | None] = mapped_column(Float, comment="lowest SSIM over the compared frames")
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    comparison: Mapped[Comparison] = relationship(back_populates="results")
    case: Mapped[Case] = relationship()
    hardware_kind: Mapped[HardwareKind] = relationship()


class Calibration(Base):
    """What an A/A comparison measured for one case on one hardware kind (newest applies).

    ``false_verdict_rate`` and ``mde_pct`` map a round count (as a string key) to the share of
    sub-comparisons that called a change, and to the smallest change detectable with 80 % power.
    The order effect is how the second run of a round compared with the first, with its 95 %
    interval (``tracker.comparisons.calibration.order_effect``); NULL in calibrations stored
    before it was measured.
    """

    __tablename__ = "calibrations"
    __table_args__ = (Index("ix_calibrations_series", "case_id", "hardware_kind_id", "created_at"),)

    id: Mapped[int_pk]
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    comparison_id: Mapped[int | None] = mapped_column(ForeignKey("comparisons.id", ondelete="SET NULL"))
    rounds: Mapped[int] = mapped_column(Integer, nullable=False)
    round_noise_pct: Mapped[float] = mapped_column(Float, nullable=False, comment="per-arm noise, %")
    threshold_pct: Mapped[float] = mapped_column(Float, nullable=False, comment="model threshold judged, %")
    false_verdict_rate: Mapped[json_dict]
    mde_pct: Mapped[json_dict]
    order_effect_pct: Mapped[float | None] = mapped_column(
        Float, comment="second run of a round vs the first, % (negative: faster); NULL: not measured"
    )
    order_effect_low_pct: Mapped[float | None] = mapped_column(
        Float, comment="its 95 % interval's low end, %"
    )
    order_effect_high_pct: Mapped[float | None] = mapped_column(
        Float, comment="its 95 % interval's high end, %"
    )
    created_at: Mapped[created_at]

    case: Mapped[Case] = relationship()
    hardware_kind: Mapped[HardwareKind] = relationship()


class PendingEvaluation(Base):
    """A series that received runs detection has not looked at yet (``detection_deferred``).

    One row per series however many runs arrive: the scheduler evaluates each once per pass.
    """

    __tablename__ = "pending_evaluations"

    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id", ondelete="CASCADE"), primary_key=True)
    hardware_kind_id: Mapped[int] = mapped_column(
        ForeignKey("hardware_kinds.id", ondelete="CASCADE"), primary_key=True
    )
    queued_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, index=True)
