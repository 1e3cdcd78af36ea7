"""Judging one result of a comparison from its rounds: its numbers, its verdict and its note.

PR comparisons and calibrations are judged by :func:`tracker.statistics.ab.compare_rounds` (a PR
comparison's call must also hold without its most extreme round,
:mod:`tracker.statistics.one_round`); paired
checks by the pure decisions of :mod:`tracker.statistics.confirmation` (a suspect's confirmation)
and :mod:`tracker.statistics.bisection` (a bisection step), which also say how many rounds they
want. Notes name the arms that failed.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from tracker.comparisons.calibration import judged_against
from tracker.comparisons.summary import RoundView
from tracker.enums import ComparisonKind, Direction, Verdict
from tracker.models import Alert, Comparison, ComparisonResult
from tracker.statistics.ab import ComparisonStats, RoundValues, compare_rounds
from tracker.statistics.bisection import BisectCall, bisect_call
from tracker.statistics.confirmation import ConfirmationOutcome, judge_confirmation
from tracker.statistics.one_round import held_without_extreme_round
from tracker.statistics.paired_rounds import ConfirmationPolicy

_REASON_CHARS = 200


def paired_decision(
    *,
    session: Session,
    comparison: Comparison,
    alert: Alert,
    result: ComparisonResult,
    usable: list[RoundValues],
    policy: ConfirmationPolicy,
) -> tuple[int, Verdict, str]:
    """Rounds wanted in all, the verdict to store and the note, from the pure decisions."""
    scheduled = comparison.rounds_scheduled
    if comparison.kind is ComparisonKind.BISECT:
        span_pct = float(alert.evidence.get("paired_change_pct") or alert.change_pct)
        noise = judged_against(session=session, case=result.case, hardware=result.hardware_kind).prior
        call = bisect_call(
            usable,
            span_pct=span_pct,
            scheduled=scheduled,
            policy=policy,
            noise_pct=noise.noise_pct if noise is not None else None,
        )
        verdict = {
            BisectCall.BAD: Verdict.REGRESSION if span_pct > 0 else Verdict.IMPROVEMENT,
            BisectCall.GOOD: Verdict.NO_CHANGE,
        }.get(call.call, Verdict.INCONCLUSIVE)
        return call.rounds_wanted, verdict, f"bisection step: {call.call.value}, {call.reason}"
    judged = judged_against(session=session, case=result.case, hardware=result.hardware_kind)
    regression = alert.direction is Direction.REGRESSION
    judgement = judge_confirmation(
        usable,
        regression=regression,
        threshold_pct=judged.threshold_pct,
        scheduled=scheduled,
        prior=judged.prior,
        policy=policy,
    )
    verdict = {
        ConfirmationOutcome.CONFIRMED: Verdict.REGRESSION if regression else Verdict.IMPROVEMENT,
        ConfirmationOutcome.REFUTED: Verdict.NO_CHANGE,
    }.get(judgement.outcome, Verdict.INCONCLUSIVE)
    if judgement.stats is not None:
        # Show the interval the judgement used (one-sided bounds, the prior's weight capped), not
        # the PR comparisons' two-sided one, so the page and the verdict agree.
        stats = judgement.stats
        result.change_pct, result.ci_low_pct, result.ci_high_pct = (
            stats.change_pct,
            stats.ci_low_pct,
            stats.ci_high_pct,
        )
        result.round_noise_pct, result.dof = stats.round_noise_pct, stats.dof
    return judgement.rounds_wanted, verdict, judgement.reason


def judge_result(
    *,
    session: Session,
    result: ComparisonResult,
    rounds: list[RoundView],
    now: dt.datetime,
) -> ComparisonStats | None:
    """Fill a result's numbers from its usable rounds; ``None`` when there is none."""
    usable = [view.values() for view in rounds if view.usable]
    judged = judged_against(session=session, case=result.case, hardware=result.hardware_kind)
    result.rounds_done = len(usable)
    result.rounds_failed = sum(1 for view in rounds if view.ended and not view.usable)
    result.threshold_pct = judged.threshold_pct
    result.threshold_source = judged.threshold_source
    result.updated_at = now
    stats = compare_rounds(usable, threshold_pct=judged.threshold_pct, prior=judged.prior) if usable else None
    if stats is not None and result.comparison.kind is ComparisonKind.PR:
        stats = held_without_extreme_round(
            usable, stats, threshold_pct=judged.threshold_pct, prior=judged.prior
        )
    result.base_value = stats.base_ms if stats else None
    result.head_value = stats.head_ms if stats else None
    result.change_pct = stats.change_pct if stats else None
    result.ci_low_pct = stats.ci_low_pct if stats else None
    result.ci_high_pct = stats.ci_high_pct if stats else None
    result.round_noise_pct = stats.round_noise_pct if stats else None
    result.dof = stats.dof if stats else None
    return stats


def failed_arms(rounds: list[RoundView]) -> str:
    """The arms that failed, by round (the first three, then how many more): ``""`` when none did."""
    reasons = [
        f"round {view.round} {arm_name}: {failure[:_REASON_CHARS]}"
        for view in rounds
        for arm_name, arm in (("base", view.base), ("head", view.head))
        if (failure := arm.failure) is not None
    ]
    if len(reasons) > 3:
        reasons = [*reasons[:3], f"and {len(reasons) - 3} more"]
    return "; ".join(reasons)


def with_failures(note: str, failures: str) -> str:
    """``note``, followed by the failed arms when there are any."""
    return f"{note}; failed arms: {failures}" if failures else note
