"""The read side of A/B comparisons: each result's rounds, arm by arm, and the queries that list them.

A round pairs a base and a head arm of one case × hardware; an arm is a job and, once measured, its
newest successful run. :mod:`tracker.comparisons.verdicts` judges results from these same rounds.

A run flagged for its measuring conditions (``tracker.ingest.conditions``) does not count: its job is queued
once more with the same round and arm, and the arm is the newest job's — pending while the re-run
waits, measured by the re-run once it is in, without a value when the re-run was flagged too.

Rounds are queued A B, B A, ... (:func:`tracker.comparisons.creation.round_order`), but which arm
of a round ran first is read from what happened (:attr:`RoundView.first`): a re-run is queued
last and may start after the other arm.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tracker.comparisons.calibration import calibrations_of
from tracker.enums import FINISHED_JOB_STATES, Arm, ComparisonKind, ComparisonState, RunStatus
from tracker.errors import NotFound
from tracker.models import Calibration, Comparison, ComparisonResult, Job, Run
from tracker.statistics.ab import RoundValues


@dataclass(frozen=True)
class ArmView:
    """One arm of one round: its (newest) job and, once measured, its successful, counted run;
    ``excluded`` is the run the job measured when hygiene flagged it (then ``run`` is ``None``)."""

    job: Job | None
    run: Run | None
    excluded: Run | None = None

    @property
    def value_ms(self) -> float | None:
        """The run's value of record (ms per denoise step), if it measured one."""
        if self.run is None or self.run.denoise_step_ms is None or self.run.denoise_step_ms <= 0:
            return None
        return self.run.denoise_step_ms

    @property
    def ended(self) -> bool:
        """The job will not change any more (done, failed or cancelled)."""
        return self.job is not None and self.job.state in FINISHED_JOB_STATES

    @property
    def started_at(self) -> dt.datetime | None:
        """When the job was last handed to a runner (its measuring process started then, UTC);
        ``None`` while it has never been."""
        return self.job.leased_at if self.job is not None else None

    @property
    def failure(self) -> str | None:
        """Why this arm has no value although it ended."""
        if not self.ended or self.value_ms is not None:
            return None
        assert self.job is not None
        if self.job.failure_reason:
            return self.job.failure_reason
        if self.excluded is not None:
            return f"run {self.excluded.id} excluded: {self.excluded.excluded_reason}"
        return f"job {self.job.state.value}"


@dataclass(frozen=True)
class RoundView:
    """One round of a result: base and head arm, and the head/base ratio once both measured."""

    round: int
    base: ArmView
    head: ArmView

    @property
    def usable(self) -> bool:
        """Both arms measured a value."""
        return self.base.value_ms is not None and self.head.value_ms is not None

    @property
    def ended(self) -> bool:
        """Both arms' jobs ended."""
        return self.base.ended and self.head.ended

    @property
    def ratio_pct(self) -> float | None:
        """Head vs base of this round, percent."""
        if self.base.value_ms is None or self.head.value_ms is None:
            return None
        return (self.head.value_ms / self.base.value_ms - 1.0) * 100.0

    @property
    def first(self) -> Arm | None:
        """The arm that started first, as it happened: the one whose job was handed out first (on
        equal times, the one queued first); ``None`` while neither has started.

        Not the planned order: a re-run of a flagged run keeps its round but is queued last.
        """
        started = [
            (arm.started_at, arm.job.id, name)
            for name, arm in ((Arm.BASE, self.base), (Arm.HEAD, self.head))
            if arm.job is not None and arm.started_at is not None
        ]
        return min(started)[2] if started else None

    def values(self) -> RoundValues:
        """The pair the statistics take (only for a usable round)."""
        assert self.base.value_ms is not None
        assert self.head.value_ms is not None
        return RoundValues(base=self.base.value_ms, head=self.head.value_ms)

    def values_in_run_order(self) -> RoundValues:
        """The pair in the order the arms ran: the first run as ``base``, the second as ``head``
        (only for a usable round). An A/A calibration reads its rounds so: both arms are one build,
        and ``ln(head / base)`` is then the order effect plus noise."""
        pair = self.values()
        if self.first is Arm.HEAD:
            return RoundValues(base=pair.head, head=pair.base)
        return pair


@dataclass(frozen=True)
class ResultView:
    """A case × hardware result with its rounds and, for an A/A comparison once done, the
    calibration it stored."""

    result: ComparisonResult
    rounds: list[RoundView]
    calibration: Calibration | None = None


@dataclass(frozen=True)
class ComparisonView:
    """A comparison with every result's rounds."""

    comparison: Comparison
    results: list[ResultView]


def rounds_of(*, session: Session, comparison_id: int) -> dict[tuple[int, int], list[RoundView]]:
    """Per (case id, hardware kind id), the rounds of a comparison in order."""
    jobs = session.scalars(
        select(Job)
        .where(Job.comparison_id == comparison_id)
        .order_by(Job.id)
        .execution_options(populate_existing=True)
    ).all()
    runs: dict[int, Run] = {}
    excluded: dict[int, Run] = {}
    if jobs:
        for run in session.scalars(
            select(Run)
            .where(Run.job_id.in_([job.id for job in jobs]), Run.status == RunStatus.OK)
            .order_by(Run.id)
        ):
            assert run.job_id is not None
            # The newest successful run of a job counts, unless its measuring conditions were not clean.
            (runs if run.excluded_reason is None else excluded)[run.job_id] = run
    slots: dict[tuple[int, int], dict[int, dict[Arm, Job]]] = {}
    for job in jobs:
        if job.comparison_round is None or job.arm is None:
            continue
        key = (job.case_id, job.hardware_kind_id)
        # Jobs come oldest first: a re-run queued for a flagged run takes its arm's place.
        slots.setdefault(key, {}).setdefault(job.comparison_round, {})[job.arm] = job
    table: dict[tuple[int, int], list[RoundView]] = {}
    for key, by_round in slots.items():
        table[key] = [
            RoundView(
                round=number,
                base=_arm(by_round[number].get(Arm.BASE), runs, excluded),
                head=_arm(by_round[number].get(Arm.HEAD), runs, excluded),
            )
            for number in sorted(by_round)
        ]
    return table


def _arm(job: Job | None, runs: dict[int, Run], excluded: dict[int, Run]) -> ArmView:
    if job is None:
        return ArmView(job=None, run=None)
    run = runs.get(job.id)
    return ArmView(job=job, run=run, excluded=excluded.get(job.id) if run is None else None)


def get_comparison(*, session: Session, comparison_id: int) -> Comparison:
    """One comparison with its results."""
    comparison = session.scalar(
        select(Comparison)
        .where(Comparison.id == comparison_id)
        .options(
            selectinload(Comparison.results).selectinload(ComparisonResult.case),
            selectinload(Comparison.results).selectinload(ComparisonResult.hardware_kind),
        )
    )
    if comparison is None:
        raise NotFound(f"no comparison {comparison_id}")
    return comparison


def comparison_view(*, session: Session, comparison_id: int) -> ComparisonView:
    """A comparison with, per case × hardware result, its rounds (values, run ids, job states)."""
    comparison = get_comparison(session=session, comparison_id=comparison_id)
    table = rounds_of(session=session, comparison_id=comparison.id)
    stored = (
        calibrations_of(session=session, comparison_ids=[comparison.id])
        if comparison.kind is ComparisonKind.CALIBRATION
        else {}
    )
    return ComparisonView(
        comparison=comparison,
        results=[
            ResultView(
                result=result,
                rounds=table.get((result.case_id, result.hardware_kind_id), []),
                calibration=stored.get((comparison.id, result.case_id, result.hardware_kind_id)),
            )
            for result in comparison.results
        ],
    )


def list_comparisons(
    *,
    session: Session,
    state: ComparisonState | None = None,
    pr_number: int | None = None,
    limit: int = 100,
) -> list[Comparison]:
    """Comparisons newest first, optionally in one state or for one pull request."""
    query = (
        select(Comparison)
        .order_by(Comparison.id.desc())
        .limit(limit)
        .options(
            selectinload(Comparison.results).selectinload(ComparisonResult.case),
            selectinload(Comparison.results).selectinload(ComparisonResult.hardware_kind),
            selectinload(Comparison.base_candidate),
            selectinload(Comparison.head_candidate),
        )
    )
    if state is not None:
        query = query.where(Comparison.state == state)
    if pr_number is not None:
        query = query.where(Comparison.pr_number == pr_number)
    return list(session.scalars(query))
