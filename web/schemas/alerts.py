"""Alert shapes of the JSON API."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from tracker.comparisons.summary import ComparisonView
from tracker.detection.bisection import bisection_view
from tracker.detection.output_alerts import alert_kind, output_alert_view
from tracker.diagnosis.facts import Finding
from tracker.models import Alert, AlertEvent, Commit
from tracker.views.alert_display import AlertDisplay, PairedEstimate
from tracker.workflows.sweep import SweepReport
from web.schemas.commits import CommitOut
from web.schemas.comparisons import RoundOut
from web.schemas.diagnosis import FindingOut
from web.schemas.params import InModel


class AlertEventOut(BaseModel):
    """One status change or note on an alert: who, when, why."""

    from_status: str | None
    to_status: str
    actor: str
    reason: str
    at: dt.datetime

    @classmethod
    def of(cls, event: AlertEvent) -> AlertEventOut:
        """From the ORM object."""
        return cls(
            from_status=event.from_status.value if event.from_status else None,
            to_status=event.to_status.value,
            actor=event.actor,
            reason=event.reason,
            at=event.created_at,
        )


class BisectionStepOut(BaseModel):
    """One commit measured while bisecting."""

    position: int
    commit_sha: str
    commit_title: str
    value_ms: float | None
    outcome: str = Field(description="good, bad, skipped or pending")
    job_id: int | None
    comparison_id: int | None = Field(description="paired rounds that called this step, if one run could not")
    note: str

    @classmethod
    def of(cls, step: Mapping[str, Any]) -> BisectionStepOut:
        """From one step of :func:`tracker.detection.bisection.bisection_view`."""
        return cls(
            position=step["position"],
            commit_sha=step["commit_sha"],
            commit_title=step["commit_title"],
            value_ms=step["value_ms"],
            outcome=step["outcome"],
            job_id=step["job_id"],
            comparison_id=step["comparison_id"],
            note=step["note"],
        )


class PairedConfirmationOut(BaseModel):
    """The paired rounds (last good = base, first bad = head) that confirm or refute a suspect."""

    comparison_id: int
    url: str
    state: str
    verdict: str = Field(description="regression/improvement (confirmed), no_change (refuted), inconclusive")
    base_ms: float | None
    head_ms: float | None
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    threshold_pct: float | None
    rounds_scheduled: int
    max_rounds: int
    note: str
    rounds: list[RoundOut]

    @classmethod
    def of(cls, view: ComparisonView) -> PairedConfirmationOut | None:
        """From a confirmation comparison's read model (its one result)."""
        if not view.results:
            return None
        result = view.results[0]
        return cls(
            comparison_id=view.comparison.id,
            url=f"/comparisons/{view.comparison.id}",
            state=view.comparison.state.value,
            verdict=result.result.verdict.value,
            base_ms=result.result.base_value,
            head_ms=result.result.head_value,
            change_pct=result.result.change_pct,
            ci_low_pct=result.result.ci_low_pct,
            ci_high_pct=result.result.ci_high_pct,
            threshold_pct=result.result.threshold_pct,
            rounds_scheduled=view.comparison.rounds_scheduled,
            max_rounds=view.comparison.max_rounds,
            note=result.result.note,
            rounds=[RoundOut.of(item) for item in result.rounds],
        )


class AlertOutputOut(BaseModel):
    """An output alert's check: the first bad commit's seeded output against the last good one's."""

    psnr_db: float | None = Field(description="lowest PSNR over the frames, dB")
    ssim: float | None = Field(description="lowest SSIM over the frames")
    tolerance_db: float | None = Field(description="the case's PSNR tolerance: at or above, the same picture")
    summary: str = Field(description='e.g. "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)"')

    @classmethod
    def of(cls, alert: Alert) -> AlertOutputOut | None:
        """From an output alert; ``None`` for a speed alert."""
        view = output_alert_view(alert)
        if view is None:
            return None
        return cls(psnr_db=view.psnr_db, ssim=view.ssim, tolerance_db=view.tolerance_db, summary=view.summary)


class PairedEstimateOut(BaseModel):
    """What an alert's paired rounds (last good = base, first bad = head) measured so far."""

    comparison_id: int
    url: str
    finished: bool = Field(description="the rounds are over (their note is their reading)")
    rounds: int = Field(description="usable rounds so far")
    max_rounds: int
    change_pct: float | None = Field(description="first bad vs last good, %; null before the first round")
    ci_low_pct: float | None
    ci_high_pct: float | None
    base_ms: float | None = Field(description="the last good commit's level over the rounds")
    head_ms: float | None = Field(description="the first bad commit's level over the rounds")
    note: str

    @classmethod
    def of(cls, paired: PairedEstimate) -> PairedEstimateOut:
        """From the read model of an alert's newest paired rounds."""
        return cls(
            comparison_id=paired.comparison_id,
            url=f"/comparisons/{paired.comparison_id}",
            finished=paired.finished,
            rounds=paired.rounds,
            max_rounds=paired.max_rounds,
            change_pct=paired.change_pct,
            ci_low_pct=paired.ci_low_pct,
            ci_high_pct=paired.ci_high_pct,
            base_ms=paired.base_ms,
            head_ms=paired.head_ms,
            note=paired.note,
        )


class AlertFigureOut(BaseModel):
    """The figure an alert is shown with, and what it rests on."""

    basis: str = Field(
        description="paired (the paired rounds' estimate and interval), detection (detection's first "
        "estimate: no paired round measured it) or output (the PSNR against the tolerance, dB)"
    )
    change_pct: float
    ci_low_pct: float | None
    ci_high_pct: float | None
    before: float | None = Field(description="in unit: the last good side's level, or the tolerance")
    after: float | None = Field(description="in unit: the first bad side's level, or the PSNR")
    unit: str = Field(description="ms, or dB for an output alert")
    text: str = Field(description='e.g. "-1.37 % [-2.30, -0.45] % in 16 paired rounds"')

    @classmethod
    def of(cls, display: AlertDisplay) -> AlertFigureOut:
        """From the alert's display read model."""
        return cls(
            basis=display.basis.value,
            change_pct=display.change_pct,
            ci_low_pct=display.ci_low_pct,
            ci_high_pct=display.ci_high_pct,
            before=display.before,
            after=display.after,
            unit=display.unit,
            text=display.text,
        )


class AlertOut(BaseModel):
    """A change on a series, where it happened and how it stands."""

    id: int
    url: str
    case: str
    hardware: str
    metric: str
    kind: str = Field(
        default="speed",
        description="output (the seeded output changed; before/after are then the tolerance and "
        "the PSNR, dB) or speed",
    )
    output: AlertOutputOut | None = Field(default=None, description="output alerts: the output check")
    direction: str = Field(description="regression or improvement")
    state: str = Field(
        description="status, except an open suspect: 'confirming' while paired rounds decide, "
        "'unconfirmed' once they refuted it or could not tell it from noise (never 'open')"
    )
    status: str
    confirmation: str = Field(
        description="pending, confirmed, held, refuted, too_noisy, not_possible or not_needed"
    )
    confirmation_reason: str = Field(
        default="", description="why the alert stands where it does: the paired rounds' reading or progress"
    )
    figure: AlertFigureOut = Field(
        description="what lists show: the paired estimate and interval when paired rounds measured "
        "the change, else detection's estimate (before_ms/after_ms/change_pct below)"
    )
    paired_estimate: PairedEstimateOut | None = Field(
        default=None, description="the newest paired rounds of the alert, if it has any"
    )
    last_good_commit: CommitOut | None
    first_bad_commit: CommitOut
    culprit_commit: CommitOut | None
    fixed_by_commit: CommitOut | None
    before_ms: float = Field(description="detection's level before the change (output alerts: see kind)")
    after_ms: float
    change_pct: float = Field(description="detection's first estimate, %")
    threshold_pct: float
    noise_pct: float | None
    p_value: float | None
    single_run_basis: bool = Field(description="rests on single runs without a noise estimate")
    bisection_state: str | None
    group_id: int | None = Field(
        default=None, description="the alert group it is triaged with (/groups/{id}); null: a suspect"
    )
    created_at: dt.datetime
    updated_at: dt.datetime | None
    diagnosis: list[FindingOut] = Field(
        default_factory=list,
        description="why: what else differs between the last good and first bad commits' runs "
        "(compile counters, GPU state, step 0 vs steady state, stages, memory), most telling first; "
        "empty when nothing does beyond noise (or when the list was asked for without it)",
    )

    @classmethod
    def of(cls, alert: Alert, display: AlertDisplay, diagnosis: Sequence[Finding] = ()) -> AlertOut:
        """From the ORM object, with its display (state, figure, paired rounds) and diagnosis."""
        return cls(**_alert_fields(alert, display, diagnosis))


class AlertDetailOut(AlertOut):
    """An alert with its history, bisection steps and the evidence detection gave."""

    events: list[AlertEventOut]
    bisection_steps: list[BisectionStepOut]
    paired_confirmation: PairedConfirmationOut | None = Field(
        description="the paired rounds that decided (or are deciding) whether the change is real"
    )
    evidence: dict[str, Any]

    @classmethod
    def of(
        cls,
        alert: Alert,
        display: AlertDisplay,
        diagnosis: Sequence[Finding] = (),
        *,
        confirmation: ComparisonView | None = None,
    ) -> AlertDetailOut:
        """From the ORM object, with its display, events, steps, the confirmation's rounds and the diagnosis."""
        return cls(
            **_alert_fields(alert, display, diagnosis),
            paired_confirmation=PairedConfirmationOut.of(confirmation) if confirmation else None,
            events=[AlertEventOut.of(event) for event in alert.events],
            bisection_steps=[BisectionStepOut.of(step) for step in bisection_view(alert)],
            evidence=dict(alert.evidence),
        )


def _alert_fields(alert: Alert, display: AlertDisplay, diagnosis: Sequence[Finding]) -> dict[str, Any]:
    """The fields of :class:`AlertOut`, which :class:`AlertDetailOut` shows too."""

    def commit(value: Commit | None) -> CommitOut | None:
        return CommitOut.of(value) if value is not None else None

    return {
        "id": alert.id,
        "url": f"/alerts/{alert.id}",
        "case": alert.case.slug,
        "hardware": alert.hardware_kind.name,
        "metric": alert.metric.value,
        "kind": alert_kind(alert),
        "output": AlertOutputOut.of(alert),
        "direction": alert.direction.value,
        **display_fields(alert, display),
        "status": alert.status.value,
        "last_good_commit": commit(alert.last_good_commit),
        "first_bad_commit": CommitOut.of(alert.first_bad_commit),
        "culprit_commit": commit(alert.culprit_commit),
        "fixed_by_commit": commit(alert.fixed_by_commit),
        "before_ms": alert.before_value,
        "after_ms": alert.after_value,
        "change_pct": alert.change_pct,
        "threshold_pct": alert.threshold_pct,
        "noise_pct": alert.noise_pct,
        "p_value": alert.p_value,
        "single_run_basis": alert.single_run_basis,
        "bisection_state": alert.bisection_state.value if alert.bisection_state else None,
        "group_id": alert.group_id,
        "created_at": alert.created_at,
        "updated_at": alert.updated_at,
        "diagnosis": [FindingOut.of(finding) for finding in diagnosis],
    }


def display_fields(alert: Alert, display: AlertDisplay) -> dict[str, Any]:
    """How an alert reads (state, confirmation, the figure shown, its paired rounds), for every
    schema that lists alerts."""
    return {
        "state": display.state.value,
        "confirmation": alert.confirmation.value,
        "confirmation_reason": "" if display.is_output else display.reason,
        "figure": AlertFigureOut.of(display),
        "paired_estimate": PairedEstimateOut.of(display.paired) if display.paired is not None else None,
    }


class TriageIn(InModel):
    """A triage decision."""

    status: str = Field(description="acknowledged, fixed, invalid, expected, or open to reopen")
    reason: str = Field(default="", max_length=4000, description="why; required except to acknowledge")


class SweepOut(BaseModel):
    """What a sweep did."""

    series: int
    alerts: list[AlertOut]

    @classmethod
    def of(cls, report: SweepReport, displays: Mapping[int, AlertDisplay]) -> SweepOut:
        """From the sweep's report: the alerts it created or changed, without their diagnosis."""
        return cls(
            series=report.series,
            alerts=[AlertOut.of(alert, displays[alert.id]) for alert in report.alerts_touched],
        )
