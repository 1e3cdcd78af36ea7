"""Shapes of the comparison and calibration endpoints."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tracker.comparisons.creation import MAX_ROUNDS
from tracker.comparisons.labels import ResultOutcome, comparison_label, result_label
from tracker.comparisons.output_checks import OutputRuns, ResultKey, result_key
from tracker.comparisons.summary import ArmView, ComparisonView, ResultView, RoundView
from tracker.diagnosis.facts import Finding
from tracker.models import Calibration, Candidate, Comparison, ComparisonResult
from web.schemas.calibrations import OrderEffectOut
from web.schemas.diagnosis import FindingOut
from web.schemas.output_checks import OutputCheckOut
from web.schemas.params import MAX_INT32, InModel
from wire import PatchRefs, Sha

Slug = Annotated[str, Field(min_length=1, max_length=128)]
HardwareName = Annotated[str, Field(min_length=1, max_length=64)]
Rounds = Annotated[int, Field(ge=1, le=MAX_ROUNDS)]


class CandidateIn(InModel):
    """A commit plus the patches stacked on it, in order (shas or ``#PR`` / ``refs/pull/N/head``)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    sha: Sha
    patches: PatchRefs = Field(default_factory=list)


class ComparisonIn(InModel):
    """A request to compare a head candidate with a base over cases × hardware kinds."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    base: CandidateIn
    head: CandidateIn
    cases: Annotated[list[Slug], Field(min_length=1, max_length=64)]
    hardware: Annotated[list[HardwareName], Field(min_length=1, max_length=16)] | None = Field(
        default=None, description="default: every kind each case runs on"
    )
    rounds: Rounds = 2
    max_rounds: Rounds = Field(default=8, description="rounds are doubled up to this while inconclusive")
    requests_per_round: Annotated[int, Field(ge=1, le=1000)] = 5
    pr_number: Annotated[int, Field(ge=1, le=MAX_INT32)] | None = None
    pr_url: Annotated[str, Field(max_length=512, pattern=r"^https?://")] | None = Field(
        default=None, description="the pull request's page (http or https only)"
    )
    command: Annotated[str, Field(max_length=2000)] = ""

    @model_validator(mode="after")
    def _round_cap(self) -> ComparisonIn:
        if self.max_rounds < self.rounds:
            raise ValueError(f"max_rounds: {self.max_rounds} is below rounds ({self.rounds})")
        return self


class CalibrationIn(InModel):
    """A request to calibrate: an A/A comparison of one candidate with itself."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    candidate: CandidateIn
    cases: Annotated[list[Slug], Field(min_length=1, max_length=64)]
    hardware: Annotated[list[HardwareName], Field(min_length=1, max_length=16)] | None = None
    rounds: Annotated[int, Field(ge=2, le=MAX_ROUNDS)] = 8
    requests_per_round: Annotated[int, Field(ge=1, le=1000)] = 5


class CandidateOut(BaseModel):
    """A candidate: its label, base commit and patches."""

    label: str
    sha: str
    patches: list[str]

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateOut:
        """From the ORM object."""
        return cls(
            label=candidate.label,
            sha=candidate.base_commit.sha,
            patches=[patch.ref for patch in candidate.patches],
        )


class ArmOut(BaseModel):
    """One arm of a round: its job, its state and, once measured, its run and value."""

    job_id: int | None
    job_state: str | None
    run_id: int | None
    value_ms: float | None
    failure: str | None

    @classmethod
    def of(cls, arm: ArmView) -> ArmOut:
        """From the read model."""
        return cls(
            job_id=arm.job.id if arm.job else None,
            job_state=arm.job.state.value if arm.job else None,
            run_id=arm.run.id if arm.run else None,
            value_ms=arm.value_ms,
            failure=arm.failure,
        )


class RoundOut(BaseModel):
    """One round: base and head arm, which of them ran first, and head vs base in percent."""

    round: int
    first_arm: str | None = Field(
        description="base or head: the arm whose run started first in this round, as it happened "
        "(rounds are queued A B, B A, ...; a re-run of a flagged run may start after the other arm); "
        "null while neither has started"
    )
    base_ms: float | None
    head_ms: float | None
    ratio_pct: float | None
    usable: bool
    base: ArmOut
    head: ArmOut

    @classmethod
    def of(cls, view: RoundView) -> RoundOut:
        """From the read model."""
        first = view.first
        return cls(
            round=view.round,
            first_arm=first.value if first is not None else None,
            base_ms=view.base.value_ms,
            head_ms=view.head.value_ms,
            ratio_pct=view.ratio_pct,
            usable=view.usable,
            base=ArmOut.of(view.base),
            head=ArmOut.of(view.head),
        )


class _ResultFields(BaseModel):
    """The fields of a result, with or without its rounds: the detail is built from a read model,
    not from the row the summary is built from, so the two share fields instead of one extending the
    other (each then has one ``of``, taking what it is built from)."""

    case: str
    hardware: str
    verdict: str
    label: str = Field(
        description="the verdict in words with the output check: an output changed beyond the tolerance "
        'is never a plain improvement ("faster, but the output changed")'
    )
    output: OutputCheckOut
    base_ms: float | None
    head_ms: float | None
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    threshold_pct: float | None
    threshold_source: str | None
    round_noise_pct: float | None
    dof: int | None
    rounds_done: int
    rounds_failed: int
    note: str
    updated_at: dt.datetime | None
    order_effect: OrderEffectOut | None = Field(
        description="A/A calibrations, once stored: the second run of a round against the first; "
        "null for other comparisons"
    )


class ComparisonResultOut(_ResultFields):
    """The verdict for one case on one hardware kind (values are ms per denoise step)."""

    @classmethod
    def of(
        cls,
        result: ComparisonResult,
        runs: OutputRuns | None = None,
        calibration: Calibration | None = None,
    ) -> ComparisonResultOut:
        """From the ORM object (and the runs whose outputs it compared, and the calibration an
        A/A comparison stored for it)."""
        return cls(**_result_fields(result, runs or OutputRuns(), calibration))


class ComparisonResultDetailOut(_ResultFields):
    """A result with its rounds and, once it has a verdict, its diagnosis."""

    rounds: list[RoundOut]
    diagnosis: list[FindingOut] = Field(
        default_factory=list,
        description="why: what else differs between the head and base arms' runs (compile counters, "
        "GPU state, step 0 vs steady state, stages, memory), most telling first; empty while pending "
        "or when nothing does beyond noise",
    )

    @classmethod
    def of(
        cls, view: ResultView, diagnosis: Sequence[Finding] = (), runs: OutputRuns | None = None
    ) -> ComparisonResultDetailOut:
        """From the read model (and the result's diagnosis and output runs, if read)."""
        return cls(
            **_result_fields(view.result, runs or OutputRuns(), view.calibration),
            rounds=[RoundOut.of(item) for item in view.rounds],
            diagnosis=[FindingOut.of(finding) for finding in diagnosis],
        )


class _ComparisonFields(BaseModel):
    """The fields of a comparison, whichever shape its results take (shared as :class:`_ResultFields`
    are)."""

    id: int
    state: str
    kind: str = Field(description="pr, calibration, confirmation (of an alert) or bisect (a bisection step)")
    alert_id: int | None = Field(description="the alert a confirmation or bisection step decides")
    base: CandidateOut
    head: CandidateOut
    rounds: int
    rounds_scheduled: int
    max_rounds: int
    requests_per_round: int
    pr_number: int | None
    pr_url: str | None
    command: str
    case_selection: str
    requested_by: str
    created_at: dt.datetime
    finished_at: dt.datetime | None
    label: str = Field(
        description="the state until done, then the results together: regression, improvement, no change, "
        'inconclusive, or with an output changed beyond tolerance "faster, but the output changed", '
        '"slower, and the output changed", "output changed"'
    )


class ComparisonOut(_ComparisonFields):
    """A comparison and its per case × hardware results."""

    results: list[ComparisonResultOut]

    @classmethod
    def of(
        cls,
        comparison: Comparison,
        outputs: Mapping[ResultKey, OutputRuns] | None = None,
        calibrations: Mapping[tuple[int, int, int], Calibration] | None = None,
    ) -> ComparisonOut:
        """From the ORM object (results without their rounds); ``outputs``: the runs whose outputs
        each result compared (:func:`tracker.comparisons.output_checks.output_runs`);
        ``calibrations``: those A/A comparisons stored
        (:func:`tracker.comparisons.calibration.calibrations_of`)."""
        found = outputs or {}
        stored = calibrations or {}
        return cls(
            **_comparison_fields(comparison),
            results=[
                ComparisonResultOut.of(
                    result,
                    found.get(result_key(result)),
                    stored.get((comparison.id, result.case_id, result.hardware_kind_id)),
                )
                for result in comparison.results
            ],
        )


class ComparisonDetailOut(_ComparisonFields):
    """A comparison with every result's rounds."""

    results: list[ComparisonResultDetailOut]

    @classmethod
    def of(
        cls,
        view: ComparisonView,
        diagnoses: Mapping[tuple[int, int], Sequence[Finding]] | None = None,
        outputs: Mapping[ResultKey, OutputRuns] | None = None,
    ) -> ComparisonDetailOut:
        """From the read model; ``diagnoses`` by (case id, hardware kind id) and ``outputs`` (as
        :meth:`ComparisonOut.of`), where read."""
        found = diagnoses or {}
        return cls(
            **_comparison_fields(view.comparison),
            results=[
                ComparisonResultDetailOut.of(
                    result,
                    found.get((result.result.case_id, result.result.hardware_kind_id), ()),
                    (outputs or {}).get(result_key(result.result)),
                )
                for result in view.results
            ],
        )


def _result_fields(
    result: ComparisonResult, runs: OutputRuns, calibration: Calibration | None
) -> dict[str, Any]:
    return {
        "case": result.case.slug,
        "hardware": result.hardware_kind.name,
        "verdict": result.verdict.value,
        "label": result_label(result.verdict, result.output_status),
        "output": OutputCheckOut.of(result, runs),
        "base_ms": result.base_value,
        "head_ms": result.head_value,
        "change_pct": result.change_pct,
        "ci_low_pct": result.ci_low_pct,
        "ci_high_pct": result.ci_high_pct,
        "threshold_pct": result.threshold_pct,
        "threshold_source": result.threshold_source,
        "round_noise_pct": result.round_noise_pct,
        "dof": result.dof,
        "rounds_done": result.rounds_done,
        "rounds_failed": result.rounds_failed,
        "note": result.note,
        "updated_at": result.updated_at,
        "order_effect": OrderEffectOut.of(calibration),
    }


def _comparison_fields(comparison: Comparison) -> dict[str, Any]:
    return {
        "id": comparison.id,
        "state": comparison.state.value,
        "kind": comparison.kind.value,
        "alert_id": comparison.alert_id,
        "base": CandidateOut.of(comparison.base_candidate),
        "head": CandidateOut.of(comparison.head_candidate),
        "rounds": comparison.rounds,
        "rounds_scheduled": comparison.rounds_scheduled,
        "max_rounds": comparison.max_rounds,
        "requests_per_round": comparison.requests_per_round,
        "pr_number": comparison.pr_number,
        "pr_url": comparison.pr_url,
        "command": comparison.command,
        "case_selection": comparison.case_selection,
        "requested_by": comparison.requested_by,
        "created_at": comparison.created_at,
        "finished_at": comparison.finished_at,
        "label": comparison_label(
            comparison.state,
            [ResultOutcome(result.verdict, result.output_status) for result in comparison.results],
        ),
    }
