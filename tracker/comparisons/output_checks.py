"""Each comparison result's output check: head's seeded output against base's, stored on the result.

A side is every successful run of the result's base (or head) jobs; the newest of them with a
saved output speaks for it (:mod:`tracker.outputs.checks`). The check runs whenever the result is
recomputed, so a later round's output is seen, and stays cheap: equal digests answer without
decoding anything, otherwise two small references are decoded. It is no verdict on speed: the
result's ``verdict`` stays the rounds', and :mod:`tracker.comparisons.labels` says both together.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tracker.comparisons.summary import RoundView, rounds_of
from tracker.enums import Arm, RunStatus
from tracker.errors import NotFound
from tracker.models import Comparison, ComparisonResult, Job, Run, RunOutput
from tracker.outputs.checks import OutputCheck, check_outputs, tolerance_of

ResultKey = tuple[int, int, int]  # (comparison id, case id, hardware kind id)


@dataclass(frozen=True)
class OutputRuns:
    """The runs whose outputs speak for a result's sides (``None``: that side saved no output)."""

    base_run_id: int | None = None
    head_run_id: int | None = None


def output_runs(*, session: Session, comparison_ids: Collection[int]) -> dict[ResultKey, OutputRuns]:
    """Per result of the comparisons, the newest successful run with a saved output on each side
    (one query, however many comparisons)."""
    if not comparison_ids:
        return {}
    key = (Job.comparison_id, Job.case_id, Job.hardware_kind_id, Job.arm)
    rows = session.execute(
        select(*key, func.max(Run.id))
        .join(Run, Run.job_id == Job.id)
        .join(RunOutput, RunOutput.run_id == Run.id)
        .where(
            Job.comparison_id.in_(sorted(comparison_ids)), Job.arm.is_not(None), Run.status == RunStatus.OK
        )
        .group_by(*key)
    ).all()
    arms: dict[ResultKey, dict[Arm, int]] = {}
    for comparison_id, case_id, hardware_kind_id, arm, run_id in rows:
        if comparison_id is not None and arm is not None:  # always, by the query's filter
            arms.setdefault((comparison_id, case_id, hardware_kind_id), {})[arm] = run_id
    return {key: OutputRuns(found.get(Arm.BASE), found.get(Arm.HEAD)) for key, found in arms.items()}


def result_key(result: ComparisonResult) -> ResultKey:
    """The key of ``result`` in :func:`output_runs`."""
    return (result.comparison_id, result.case_id, result.hardware_kind_id)


def _has_run(rounds: Sequence[RoundView], arm: Arm) -> bool:
    views = [view.base if arm is Arm.BASE else view.head for view in rounds]
    return any(view.run is not None or view.excluded is not None for view in views)


def check_result_output(
    *, session: Session, result: ComparisonResult, rounds: Sequence[RoundView]
) -> OutputCheck | None:
    """Check head's output against base's with the case's tolerance and store it on ``result``.

    Until both sides have a successful run nothing is checked (``None``, the result unchanged);
    then a side without a saved output makes it ``missing``.
    """
    if not _has_run(rounds, Arm.BASE) or not _has_run(rounds, Arm.HEAD):
        return None
    sides = output_runs(session=session, comparison_ids=[result.comparison_id]).get(
        result_key(result), OutputRuns()
    )
    check = check_outputs(
        session,
        before=[sides.base_run_id] if sides.base_run_id is not None else [],
        after=[sides.head_run_id] if sides.head_run_id is not None else [],
        tolerance_db=tolerance_of(result.case),
    )
    result.output_status = check.status
    result.output_psnr_db = check.psnr_db
    result.output_ssim = check.ssim
    return check


def recheck_outputs(*, session: Session, comparison_id: int) -> dict[tuple[int, int], OutputCheck | None]:
    """Check every result of a comparison again (outputs stored after its runs); per (case id,
    hardware kind id), the check or ``None`` where a side has no run yet."""
    comparison = session.get(Comparison, comparison_id)
    if comparison is None:
        raise NotFound(f"no comparison {comparison_id}")
    table = rounds_of(session=session, comparison_id=comparison_id)
    checks: dict[tuple[int, int], OutputCheck | None] = {}
    for result in comparison.results:
        key = (result.case_id, result.hardware_kind_id)
        checks[key] = check_result_output(session=session, result=result, rounds=table.get(key, []))
    session.flush()
    return checks
