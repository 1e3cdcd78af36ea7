"""A comparison result's output check: head's seeded output against base's, stored on the result as
its rounds arrive (identical for equal digests, changed with PSNR/SSIM, missing without an output),
and an A/A calibration that stays identical. Jobs are driven the way runners drive them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sqlalchemy.orm import Session

from tests.factories import job_result
from tests.tracker.comparisons.test_comparisons import LIMITS, T0, candidate, compare, planted, runner
from tests.tracker.output_pictures import give_output, picture
from tracker.catalog.cases import get_current_case
from tracker.comparisons.creation import create_calibration
from tracker.comparisons.labels import ResultOutcome, comparison_label, result_label
from tracker.comparisons.output_checks import output_runs, recheck_outputs
from tracker.comparisons.summary import comparison_view
from tracker.enums import Arm, ComparisonState, OutputStatus, Verdict
from tracker.models import Comparison, Job
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result

CASE = "qwen-image-t2i-1024"
Pixels = Callable[[Job], np.ndarray | None]


def drive_with_outputs(
    session: Session, speed: Callable[[Job], float | str], pixels: Pixels, limit: int = 100
) -> list[int]:
    """Run every queued job; each run's output (``pixels``; ``None``: it saved none) is stored right
    after its upload, so the next arm's upload is the first to see it. Returns the run ids."""
    agent = runner(session)
    run_ids = []
    for _ in range(limit):
        job = workflow_jobs.claim(session=session, runner=agent, now=T0)
        if job is None:
            return run_ids
        if job.comparison_round is None:
            continue  # what follows a verdict (a regression's evidence runs) is not this test's
        measured = speed(job)
        assert isinstance(measured, float)
        result = job_result(job.attempts, step_times_ms=[measured] * 3)
        outcome = store_job_result(
            session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0
        )
        run_ids.append(outcome.run.id)
        if (shown := pixels(job)) is not None:
            give_output(session, outcome.run.id, shown)
    raise AssertionError("the queue never drained")


def by_arm(base: np.ndarray | None, head: np.ndarray | None) -> Pixels:
    return lambda job: head if job.arm is Arm.HEAD else base


def only_result(comparison: Comparison) -> tuple[OutputStatus | None, float | None, float | None]:
    (result,) = comparison.results
    return result.output_status, result.output_psnr_db, result.output_ssim


def test_a_head_whose_output_changed_is_stored_changed_with_psnr_as_rounds_arrive(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(-10.0), by_arm(picture(), picture(change=25.0)))
    assert comparison.state is ComparisonState.DONE
    (result,) = comparison.results
    assert result.verdict is Verdict.IMPROVEMENT, result.note
    # Seen while the rounds arrived (round 1's outputs by round 2's arms), no recheck needed.
    status, psnr_db, ssim = only_result(comparison)
    assert status is OutputStatus.CHANGED
    assert psnr_db is not None
    assert 15.0 < psnr_db < 40.0
    assert ssim is not None
    assert 0.0 < ssim < 0.95
    assert result_label(result.verdict, status) == "faster, but the output changed"
    outcome = ResultOutcome(result.verdict, status)
    assert comparison_label(comparison.state, [outcome]) == "faster, but the output changed"


def test_equal_digests_are_identical_without_numbers(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(10.0), by_arm(picture(), picture()))
    assert only_result(comparison) == (OutputStatus.IDENTICAL, None, None)
    (result,) = comparison.results
    assert result.verdict is Verdict.REGRESSION
    assert result_label(result.verdict, result.output_status) == "regression"


def test_a_faint_difference_is_the_same_picture_within_the_tolerance(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), picture(seed=8)))
    status, psnr_db, _ = only_result(comparison)
    assert status is OutputStatus.SAME
    assert psnr_db is not None
    assert psnr_db >= 40.0


def test_a_case_tolerance_decides_changed(session: Session) -> None:
    case = get_current_case(session=session, slug=CASE)
    case.output_psnr_db = 80.0  # stricter than the faint difference's ~50 dB
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), picture(seed=8)))
    assert only_result(comparison)[0] is OutputStatus.CHANGED


def test_a_side_without_an_output_is_missing(session: Session) -> None:
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), None))
    assert only_result(comparison) == (OutputStatus.MISSING, None, None)
    (sides,) = output_runs(session=session, comparison_ids=[comparison.id]).values()
    assert sides.base_run_id is not None
    assert sides.head_run_id is None


def test_nothing_is_checked_before_both_sides_ran(session: Session) -> None:
    comparison = compare(session, rounds=2)
    agent = runner(session)
    job = workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert job is not None
    assert job.arm is Arm.BASE
    store_job_result(
        session=session, runner=agent, job_id=job.id, result=job_result(job.attempts), limits=LIMITS, now=T0
    )
    assert only_result(comparison) == (None, None, None)


def test_outputs_stored_after_the_runs_are_seen_by_a_recheck(session: Session) -> None:
    comparison = compare(session, rounds=2)
    run_ids = drive_with_outputs(session, planted(0.0), by_arm(None, None))
    assert only_result(comparison)[0] is OutputStatus.MISSING
    view = comparison_view(session=session, comparison_id=comparison.id)
    heads = {rv.head.run.id for rv in view.results[0].rounds if rv.head.run is not None}
    for run_id in run_ids:
        give_output(session, run_id, picture(change=25.0) if run_id in heads else picture())
    [check] = recheck_outputs(session=session, comparison_id=comparison.id).values()
    assert check is not None
    assert check.changed
    assert check.after_run_id == max(heads)
    assert only_result(comparison)[0] is OutputStatus.CHANGED


def test_an_a_a_calibration_is_identical_and_still_stores_its_calibration(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=2
    )
    drive_with_outputs(session, planted(0.0, noise_pct=0.5), by_arm(picture(), picture()))
    assert comparison.state is ComparisonState.DONE
    assert only_result(comparison) == (OutputStatus.IDENTICAL, None, None)
    (result,) = comparison.results
    assert result.verdict in (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE)
