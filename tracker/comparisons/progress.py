"""A comparison moving on as its rounds end: results recomputed, rounds doubled, done, or cancelled.

Every time an arm ends (a run arrives, or the job fails or is cancelled) the result of its case ×
hardware is recomputed from the rounds whose two arms both measured; a failed arm makes its round
unusable. When every scheduled round of a result has ended and the verdict is still inconclusive,
the rounds are doubled (2 → 4 → 8, up to ``max_rounds``), as Pinpoint asks for more data; at the
cap the result stays inconclusive and says so. Paired checks (confirmations, bisection steps) ask
for rounds as their own decisions say. A comparison of a candidate with itself (A/A) stores a
calibration when it is done, its noise and order effect read from the rounds in the order they
ran. Each recomputation also checks head's seeded output against base's
(:mod:`tracker.comparisons.output_checks`). Reading comparisons back, round by round, is
:mod:`tracker.comparisons.summary`.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.calibration import calibration_interfered, store_calibration
from tracker.comparisons.creation import enqueue_round
from tracker.comparisons.output_checks import check_result_output
from tracker.comparisons.summary import RoundView, rounds_of
from tracker.comparisons.verdicts import failed_arms, judge_result, paired_decision, with_failures
from tracker.enums import (
    FINISHED_COMPARISON_STATES,
    PENDING_JOB_STATES,
    ComparisonKind,
    ComparisonState,
    Verdict,
)
from tracker.errors import Conflict, NotFound
from tracker.models import Alert, Comparison, ComparisonResult, Job, Run, utcnow
from tracker.queue.jobs import cancel_job
from tracker.statistics.paired_rounds import ConfirmationPolicy


def cancel_comparison(
    *, session: Session, comparison_id: int, reason: str, now: dt.datetime | None = None
) -> Comparison:
    """Cancel a comparison's queued and running jobs; results still pending become inconclusive."""
    now = now or utcnow()
    # Jobs first, then the comparison: the order an arriving run locks them in.
    open_jobs = session.scalars(
        select(Job)
        .where(Job.comparison_id == comparison_id, Job.state.in_(PENDING_JOB_STATES))
        .order_by(Job.id)
        .with_for_update()
    ).all()
    comparison = _locked(session=session, comparison_id=comparison_id)
    if comparison.state in FINISHED_COMPARISON_STATES:
        raise Conflict(f"comparison {comparison_id} is already {comparison.state.value}")
    comparison.state = ComparisonState.CANCELLED
    comparison.finished_at = now
    for job in open_jobs:
        cancel_job(session=session, job_id=job.id, reason=reason, now=now)
    table = rounds_of(session=session, comparison_id=comparison.id)
    for result in comparison.results:
        if result.verdict is not Verdict.PENDING:
            continue
        rounds = table.get((result.case_id, result.hardware_kind_id), [])
        stats = judge_result(session=session, result=result, rounds=rounds, now=now)
        result.verdict = Verdict.INCONCLUSIVE
        so_far = f"; so far: {stats.reason}" if stats is not None else ""
        result.note = f"cancelled after {result.rounds_done} of {len(rounds)} rounds ({reason}){so_far}"
    session.flush()
    return comparison


def record_comparison_job(*, session: Session, job: Job, run: Run, now: dt.datetime) -> Comparison:
    """Advance the comparison of ``job`` after its run (ok or failed) was stored; return it."""
    del run  # the run is read back with the round's other arm
    return _advance(session=session, job=job, now=now)


def comparison_job_ended(*, session: Session, job: Job, now: dt.datetime) -> Comparison:
    """Advance the comparison of ``job`` after it ended without a run (failed for good, cancelled)."""
    return _advance(session=session, job=job, now=now)


def _advance(*, session: Session, job: Job, now: dt.datetime) -> Comparison:
    assert job.comparison_id is not None
    comparison = _locked(session=session, comparison_id=job.comparison_id)
    if comparison.state in FINISHED_COMPARISON_STATES:
        return comparison  # cancelled: its jobs ending change nothing
    if comparison.state is ComparisonState.PENDING:
        comparison.state = ComparisonState.RUNNING
    table = rounds_of(session=session, comparison_id=comparison.id)
    for result in comparison.results:
        if (result.case_id, result.hardware_kind_id) == (job.case_id, job.hardware_kind_id):
            rounds = table.get((result.case_id, result.hardware_kind_id), [])
            _refresh(session=session, comparison=comparison, result=result, rounds=rounds, now=now)
    if any(result.verdict is Verdict.PENDING for result in comparison.results):
        session.flush()
        return comparison
    measured_any = any(
        arm.value_ms is not None
        for rounds in table.values()
        for view in rounds
        for arm in (view.base, view.head)
    )
    comparison.state = ComparisonState.DONE if measured_any else ComparisonState.FAILED
    comparison.finished_at = now
    if comparison.state is ComparisonState.DONE and comparison.kind is ComparisonKind.CALIBRATION:
        for result in comparison.results:
            # In the order the arms ran: both are one build, and what running second does to a
            # run is measured apart from the noise (tracker.comparisons.calibration).
            usable = [
                view.values_in_run_order()
                for view in table.get((result.case_id, result.hardware_kind_id), [])
                if view.usable
            ]
            outliers = store_calibration(
                session=session,
                comparison=comparison,
                case=result.case,
                hardware=result.hardware_kind,
                rounds=usable,
            )
            if outliers:
                listing = ", ".join(str(number) for number in outliers)
                result.note = (
                    f"{result.note}; round {listing} stood apart and did not set the calibrated noise"
                )
    session.flush()
    return comparison


def _refresh(
    *,
    session: Session,
    comparison: Comparison,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> None:
    """Recompute one result; schedule more rounds when all ended inconclusive below the cap.

    Head's output is checked against base's first (every kind: an A/A's should be identical).
    """
    check_result_output(session=session, result=result, rounds=rounds)
    if comparison.kind in (ComparisonKind.CONFIRMATION, ComparisonKind.BISECT):
        _refresh_paired_check(session=session, comparison=comparison, result=result, rounds=rounds, now=now)
        return
    stats = judge_result(session=session, result=result, rounds=rounds, now=now)
    scheduled = len(rounds)
    failures = failed_arms(rounds)
    interfered = _calibration_interfered(comparison, rounds)
    if not all(view.ended for view in rounds):
        result.verdict = Verdict.PENDING
        result.note = with_failures(f"running: {result.rounds_done} of {scheduled} rounds done", failures)
    elif stats is None:
        result.verdict = Verdict.INCONCLUSIVE
        result.note = f"all {scheduled} rounds failed: {failures}"
    elif interfered and scheduled < comparison.max_rounds:
        target = min(2 * scheduled, comparison.max_rounds)
        _schedule_rounds(
            session=session, comparison=comparison, result=result, scheduled=scheduled, target=target
        )
        result.verdict = Verdict.PENDING
        listing = ", ".join(str(number) for number in interfered)
        result.note = with_failures(
            f"round {listing} of {scheduled} interfered with (a run far slower than its arm's other "
            f"runs); running rounds {scheduled + 1}–{target}",
            failures,
        )
    elif (
        stats.verdict is Verdict.INCONCLUSIVE
        and scheduled < comparison.max_rounds
        and comparison.kind is not ComparisonKind.CALIBRATION  # more rounds only for interference
    ):
        target = min(2 * scheduled, comparison.max_rounds)
        _schedule_rounds(
            session=session, comparison=comparison, result=result, scheduled=scheduled, target=target
        )
        result.verdict = Verdict.PENDING
        result.note = with_failures(
            f"inconclusive after {scheduled} rounds: {stats.reason}; running rounds {scheduled + 1}–{target}",
            failures,
        )
    elif stats.verdict is Verdict.INCONCLUSIVE:
        result.verdict = Verdict.INCONCLUSIVE
        # At the cap, "more rounds needed" is not on offer any more.
        reason = stats.reason.removesuffix(": more rounds needed")
        result.note = with_failures(f"inconclusive after {scheduled} rounds: {reason}", failures)
    else:
        result.verdict = stats.verdict
        result.note = with_failures(stats.reason, failures)


def _calibration_interfered(comparison: Comparison, rounds: list[RoundView]) -> tuple[int, ...]:
    """An A/A calibration's rounds a neighbour slowed, while too few clean ones are left of the
    rounds asked for (nothing for other comparisons)."""
    if comparison.kind is not ComparisonKind.CALIBRATION:
        return ()
    usable = [view.values_in_run_order() for view in rounds if view.usable]
    interfered = calibration_interfered(usable)
    return interfered if len(usable) - len(interfered) < comparison.rounds else ()


def _schedule_rounds(
    *, session: Session, comparison: Comparison, result: ComparisonResult, scheduled: int, target: int
) -> None:
    """Queue rounds ``scheduled + 1 .. target`` of one result and count them as scheduled."""
    for round_number in range(scheduled + 1, target + 1):
        enqueue_round(
            session=session,
            comparison=comparison,
            case=result.case,
            hardware=result.hardware_kind,
            round_number=round_number,
        )
    comparison.rounds_scheduled = max(comparison.rounds_scheduled, target)


def _refresh_paired_check(
    *,
    session: Session,
    comparison: Comparison,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> None:
    """A confirmation or bisection step: the pure decisions judge, and ask for more rounds.

    :mod:`tracker.statistics.confirmation` judges a confirmation, :mod:`tracker.statistics.bisection`
    a bisection step.
    """
    judge_result(session=session, result=result, rounds=rounds, now=now)
    scheduled = len(rounds)
    failures = failed_arms(rounds)
    if not all(view.ended for view in rounds):
        result.verdict = Verdict.PENDING
        result.note = with_failures(f"running: {result.rounds_done} of {scheduled} rounds done", failures)
        return
    alert = session.get(Alert, comparison.alert_id) if comparison.alert_id is not None else None
    if alert is None:
        result.verdict = Verdict.INCONCLUSIVE
        result.note = "the alert this check was for is gone"
        return
    usable = [view.values() for view in rounds if view.usable]
    policy = ConfirmationPolicy(initial_rounds=comparison.rounds, max_rounds=comparison.max_rounds)
    wanted, verdict, note = paired_decision(
        session=session, comparison=comparison, alert=alert, result=result, usable=usable, policy=policy
    )
    if wanted > scheduled:
        _schedule_rounds(
            session=session, comparison=comparison, result=result, scheduled=scheduled, target=wanted
        )
        result.verdict = Verdict.PENDING
        result.note = with_failures(note, failures)
        return
    result.verdict = verdict
    result.note = with_failures(note, failures)


def _locked(*, session: Session, comparison_id: int) -> Comparison:
    """The comparison, its row locked on PostgreSQL, so concurrent arms are judged one at a time."""
    comparison = session.scalar(
        select(Comparison)
        .where(Comparison.id == comparison_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if comparison is None:
        raise NotFound(f"no comparison {comparison_id}")
    return comparison
