"""A/B comparisons: interleaved rounds (A B, B A, ...), verdicts, more rounds when inconclusive,
failures, cancel, A/A calibration, thresholds from calibration. Jobs are driven the way runners
drive them; the order of the arms and the order effect: test_arm_order.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import job_result
from tests.tracker.comparisons.ordered_runs import CASE, T0, candidate, runner
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.calibration import list_calibrations
from tracker.comparisons.creation import (
    create_calibration,
    create_comparison,
)
from tracker.comparisons.progress import cancel_comparison
from tracker.comparisons.summary import comparison_view, list_comparisons
from tracker.enums import Arm, ComparisonState, JobReason, JobState, Verdict
from tracker.errors import Conflict, InvalidInput
from tracker.ingest.results import IngestLimits
from tracker.models import Calibration, Comparison, Job
from tracker.series.state import latest_calibration
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result, store_result
from wire import ResultIn

pytestmark = pytest.mark.dialect

LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
Outcome = float | str  # a value in ms, or the failure reason of a failed run


def compare(session: Session, *, aa: bool = False, **kwargs: Any) -> Comparison:
    base = candidate(session, "aaaaaaa")
    head = base if aa else candidate(session, "aaaaaaa", ["#43601"])
    options: dict[str, Any] = {"cases": [CASE], "requested_by": "test", **kwargs}
    return create_comparison(session=session, base=base, head=head, **options)


def drive(session: Session, outcome: Callable[[Job], Outcome], limit: int = 200) -> list[Job]:
    """Claim and run every queued job in queue order; ``outcome`` says what each measured."""
    agent = runner(session)
    ran: list[Job] = []
    for _ in range(limit):
        job = workflow_jobs.claim(session=session, runner=agent, now=T0)
        if job is None:
            return ran
        if job.reason is JobReason.EVIDENCE:  # a regression's profiled re-runs: no round, no verdict
            result = job_result(job.attempts, step_times_ms=[30.0] * 3)
            store_job_result(
                session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0
            )
            continue
        measured = outcome(job)
        if isinstance(measured, str):
            result = job_result(job.attempts, status="failed", failure_reason=measured)
        else:
            result = job_result(job.attempts, step_times_ms=[measured] * 3)
        store_job_result(session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0)
        ran.append(job)
    raise AssertionError("the queue never drained")


def wobble(job: Job, size_pct: float) -> float:
    """A deterministic, small run-to-run wobble per round and arm."""
    assert job.comparison_round is not None
    phase = job.comparison_round * (1.0 if job.arm is Arm.BASE else 2.3)
    return 1.0 + size_pct / 100.0 * math.sin(phase)


def planted(change_pct: float, noise_pct: float = 0.3) -> Callable[[Job], Outcome]:
    """Base at 30 ms, head ``change_pct`` slower, each run off by up to ``noise_pct``."""

    def outcome(job: Job) -> Outcome:
        level = 30.0 * (1.0 + change_pct / 100.0 if job.arm is Arm.HEAD else 1.0)
        return level * wobble(job, noise_pct)

    return outcome


def test_rounds_are_queued_interleaved_and_claimed_a_b_b_a(session: Session) -> None:
    comparison = compare(session, rounds=2)
    agent = runner(session)
    claimed = [workflow_jobs.claim(session=session, runner=agent, now=T0) for _ in range(5)]
    assert claimed[-1] is None
    jobs = [job for job in claimed if job is not None]
    assert [(job.comparison_round, job.arm) for job in jobs] == [
        (1, Arm.BASE),
        (1, Arm.HEAD),
        (2, Arm.HEAD),
        (2, Arm.BASE),
    ]
    assert {job.reason for job in jobs} == {JobReason.PR}
    assert {job.priority for job in jobs} == {10}
    assert {job.comparison_id for job in jobs} == {comparison.id}
    assert [job.candidate_id for job in jobs[:2]] == [
        comparison.base_candidate_id,
        comparison.head_candidate_id,
    ]
    assert comparison.state is ComparisonState.PENDING
    assert [result.verdict for result in comparison.results] == [Verdict.PENDING]


def test_a_a_rounds_are_distinct_jobs(session: Session) -> None:
    comparison = compare(session, aa=True, rounds=2)
    jobs = session.scalars(select(Job).where(Job.comparison_id == comparison.id)).all()
    assert len(jobs) == 4
    assert len({job.idempotency_key for job in jobs}) == 4
    assert {job.candidate_id for job in jobs} == {comparison.base_candidate_id}


def test_planted_ten_percent_head_is_a_regression(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive(session, planted(10.0))
    assert comparison.state is ComparisonState.DONE
    assert comparison.finished_at == T0
    (result,) = comparison.results
    assert result.verdict is Verdict.REGRESSION, result.note
    assert result.change_pct == pytest.approx(10.0, abs=1.0)
    assert result.ci_low_pct is not None
    assert result.ci_low_pct > 0
    assert (result.rounds_done, result.rounds_failed) == (2, 0)
    assert (result.threshold_pct, result.threshold_source) == (2.0, "model")
    assert result.dof == 1  # no series history in this database: the rounds alone
    assert result.note.startswith("slower")
    view = comparison_view(session=session, comparison_id=comparison.id)
    rounds = view.results[0].rounds
    assert [view.round for view in rounds] == [1, 2]
    first = rounds[0]
    assert first.base.value_ms == pytest.approx(30.0 * (1 + 0.003 * math.sin(1.0)))
    assert first.ratio_pct == pytest.approx(10.0, abs=1.0)
    assert first.base.job is not None
    assert first.base.run is not None
    assert first.head.run is not None
    assert first.base.run.job_id == first.base.job.id
    assert first.base.job.state is JobState.DONE


def test_equal_a_a_is_never_a_regression_and_stores_a_calibration(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=8
    )
    assert comparison.max_rounds == 8
    drive(session, planted(0.0, noise_pct=0.5))
    assert comparison.state is ComparisonState.DONE
    (result,) = comparison.results
    assert result.verdict in (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE)
    assert result.rounds_done == 8
    case = get_current_case(session=session, slug=CASE)
    calibration = latest_calibration(
        session=session, case=case, hardware=get_hardware_kind(session=session, name="H200")
    )
    assert calibration is not None
    assert calibration.comparison_id == comparison.id
    assert calibration.rounds == 8
    assert set(calibration.mde_pct) == set(calibration.false_verdict_rate) == {"2", "4", "8"}
    assert calibration.round_noise_pct > 0
    assert calibration.threshold_pct == 2.0
    assert list_calibrations(session=session, case=CASE, hardware="h200") == [calibration]
    assert list_calibrations(session=session, case=CASE, hardware="GB300") == []


def test_an_interfered_calibration_round_is_set_aside_and_the_rounds_doubled(session: Session) -> None:
    """The demo's offload case on a noisy host: three A/A rounds, one run a neighbour slowed by a
    quarter, gave 43 % noise and a 75 % detection floor. The round is set aside, more rounds run."""
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=3
    )
    assert comparison.max_rounds == 8
    quiet = planted(0.0, noise_pct=0.5)

    def one_slow_run(job: Job) -> Outcome:
        slowed = job.comparison_round == 3 and job.arm is Arm.HEAD
        return float(quiet(job)) * (1.25 if slowed else 1.0)

    drive(session, one_slow_run)
    assert comparison.state is ComparisonState.DONE
    (result,) = comparison.results
    assert result.rounds_done == 6  # 3, then doubled once: round 3 was interfered with
    assert "round 3 stood apart" in result.note
    calibration = latest_calibration(
        session=session,
        case=get_current_case(session=session, slug=CASE),
        hardware=get_hardware_kind(session=session, name="H200"),
    )
    assert calibration is not None
    assert calibration.rounds == 5
    assert calibration.round_noise_pct < 1.5


def test_a_calibration_left_with_two_rounds_keeps_them_both(session: Session) -> None:
    """At its cap with one of two rounds interfered with, nothing would be left to measure."""
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=2
    )
    comparison.max_rounds = 2
    session.flush()

    def slow_second_round(job: Job) -> Outcome:
        return 30.0 * (1.3 if job.comparison_round == 2 and job.arm is Arm.HEAD else 1.0)

    drive(session, slow_second_round)
    calibration = latest_calibration(
        session=session,
        case=get_current_case(session=session, slug=CASE),
        hardware=get_hardware_kind(session=session, name="H200"),
    )
    assert calibration is not None
    assert calibration.rounds == 2
    assert calibration.round_noise_pct > 10.0  # the noisy truth, not a crash


def test_a_quiet_calibration_runs_its_rounds_only(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=3
    )
    drive(session, planted(0.0, noise_pct=0.5))
    assert comparison.results[0].rounds_done == 3


def test_a_a_with_two_rounds_is_not_a_regression(session: Session) -> None:
    comparison = compare(session, aa=True, rounds=2, max_rounds=2)
    drive(session, planted(0.0))
    (result,) = comparison.results
    assert result.verdict in (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE)


def alternating(job: Job) -> Outcome:
    """Head +6 % in odd rounds and -4 % in even ones: the interval never settles."""
    assert job.comparison_round is not None
    if job.arm is Arm.BASE:
        return 30.0
    return 30.0 * (1.06 if job.comparison_round % 2 else 0.96)


def test_inconclusive_doubles_the_rounds_up_to_the_cap_then_says_so(session: Session) -> None:
    comparison = compare(session, rounds=2, max_rounds=8)
    agent = runner(session)
    for _ in range(4):
        job = workflow_jobs.claim(session=session, runner=agent, now=T0)
        assert job is not None
        result = job_result(job.attempts, step_times_ms=[alternating(job)] * 3)
        store_job_result(session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0)
    (result,) = comparison.results
    assert comparison.rounds_scheduled == 4
    assert result.verdict is Verdict.PENDING
    assert result.note.startswith("inconclusive after 2 rounds")
    assert comparison.state is ComparisonState.RUNNING
    ran = drive(session, alternating)
    assert [job.comparison_round for job in ran] == [3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]
    assert comparison.rounds_scheduled == 8
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.note.startswith("inconclusive after 8 rounds: interval ")
    assert "more rounds needed" not in result.note
    assert result.rounds_done == 8
    assert comparison.state is ComparisonState.DONE


def test_a_failed_arm_makes_its_round_unusable(session: Session) -> None:
    comparison = compare(session, rounds=2, max_rounds=2)

    def outcome(job: Job) -> Outcome:
        if job.comparison_round == 1 and job.arm is Arm.HEAD:
            return "build failed: patch #43601 does not apply"
        return planted(10.0)(job)

    drive(session, outcome)
    (result,) = comparison.results
    assert (result.rounds_done, result.rounds_failed) == (1, 1)
    assert result.verdict is Verdict.INCONCLUSIVE  # one round, no noise estimate
    assert result.note.startswith("inconclusive after 2 rounds")
    assert "round 1 head: build failed: patch #43601 does not apply" in result.note
    assert comparison.state is ComparisonState.DONE


def test_all_rounds_failed(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive(session, lambda job: f"CUDA out of memory ({job.arm})")
    (result,) = comparison.results
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.note.startswith("all 2 rounds failed: round 1 base: CUDA out of memory")
    assert (result.rounds_done, result.rounds_failed) == (0, 2)
    assert comparison.state is ComparisonState.FAILED
    assert comparison.rounds_scheduled == 2  # failures are not a reason for more rounds


def test_head_always_failing_is_done_not_failed(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive(session, lambda job: "head does not build" if job.arm is Arm.HEAD else 30.0)
    (result,) = comparison.results
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "round 2 head: head does not build" in result.note
    assert comparison.state is ComparisonState.DONE


def test_cancel(session: Session) -> None:
    comparison = compare(session, rounds=2)
    agent = runner(session)
    leased = workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert leased is not None
    cancel_comparison(session=session, comparison_id=comparison.id, reason="cancelled by test", now=T0)
    jobs = session.scalars(select(Job).where(Job.comparison_id == comparison.id)).all()
    assert {job.state for job in jobs} == {JobState.CANCELLED}
    assert comparison.state is ComparisonState.CANCELLED
    assert comparison.finished_at == T0
    (result,) = comparison.results
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.note.startswith("cancelled after 0 of 2 rounds")
    with pytest.raises(Conflict, match="already cancelled"):
        cancel_comparison(session=session, comparison_id=comparison.id, reason="again")
    with pytest.raises(Conflict):  # the leased attempt's late upload is refused
        store_job_result(
            session=session, runner=agent, job_id=leased.id, result=job_result(1), limits=LIMITS, now=T0
        )
    assert workflow_jobs.claim(session=session, runner=agent, now=T0) is None


def test_a_calibration_is_the_noise_prior_and_noise_never_raises_the_threshold(session: Session) -> None:
    calibration = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=8
    )
    drive(session, planted(0.0, noise_pct=1.5))
    assert calibration.state is ComparisonState.DONE
    stored = session.scalars(select(Calibration)).one()
    assert stored.mde_pct["2"] > 2.0  # two rounds alone could not tell 2 % from noise here
    comparison = compare(session, rounds=2, max_rounds=8)
    drive(session, planted(10.0, noise_pct=0.3))
    (result,) = comparison.results
    assert (result.threshold_pct, result.threshold_source) == (2.0, "model")
    # The calibration's 7 degrees of freedom join the rounds' own.
    assert result.dof == result.rounds_done - 1 + 7
    assert result.verdict is Verdict.REGRESSION


def test_series_history_is_the_noise_prior(session: Session) -> None:
    for day, value in enumerate([30.0, 30.2, 29.9, 30.1, 30.05, 29.95, 30.15, 30.0]):
        body = {
            "case": CASE,
            "hardware": "H200",
            "commit": {"sha": f"{day + 1:07x}", "committed_at": f"2026-05-{day + 1:02d}T00:00:00Z"},
            "step_times_ms": [value] * 3,
        }
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS, now=T0)
    comparison = compare(session, rounds=2)
    drive(session, planted(10.0))
    (result,) = comparison.results
    assert result.dof == 1 + 7  # the rounds' one, and seven commit-to-commit differences
    assert result.verdict is Verdict.REGRESSION


def test_hardware_must_be_one_the_case_runs_on(session: Session) -> None:
    with pytest.raises(InvalidInput, match="does not run on GB300") as raised:
        compare(session, hardware=["GB300"])
    assert raised.value.field == "hardware"
    with pytest.raises(InvalidInput, match="unknown case"):
        compare(session, cases=["no-such-case"])
    with pytest.raises(InvalidInput, match="max_rounds"):
        compare(session, rounds=4, max_rounds=2)
    explicit = compare(session, hardware=["h200"])
    assert [result.hardware_kind.name for result in explicit.results] == ["H200"]


def test_list_comparisons_newest_first_with_filters(session: Session) -> None:
    first = compare(session, pr_number=43601)
    second = compare(session, pr_number=43602)
    assert list_comparisons(session=session)[:2] == [second, first]
    assert list_comparisons(session=session, pr_number=43601) == [first]
    assert list_comparisons(session=session, state=ComparisonState.DONE) == []
