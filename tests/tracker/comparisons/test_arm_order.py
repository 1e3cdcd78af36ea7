"""The order of the arms: every kind of comparison alternates it (A B, B A, ...), the queue hands
the jobs out in that order (later rounds too), each round says which arm ran first as it happened
(a re-run of a flagged run starts after the other arm), and an A/A calibration measures the order
effect, the second run of a round against the first, apart from its noise."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats
from sqlalchemy.orm import Session

from tests.tracker.comparisons.ordered_runs import (
    CASE,
    STEP,
    T0,
    Flag,
    candidate,
    run_queue,
    runner,
    second_faster,
    wobble,
)
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.calibration import order_effect
from tracker.comparisons.creation import create_calibration, create_comparison, round_order
from tracker.comparisons.summary import RoundView, comparison_view
from tracker.enums import Arm, ComparisonKind, ComparisonState
from tracker.models import Calibration, Comparison, Job
from tracker.series.state import latest_calibration
from tracker.statistics.ab import RoundValues
from tracker.workflows import jobs as workflow_jobs

pytestmark = pytest.mark.dialect

ALTERNATING = [
    (1, Arm.BASE),
    (1, Arm.HEAD),
    (2, Arm.HEAD),
    (2, Arm.BASE),
    (3, Arm.BASE),
    (3, Arm.HEAD),
    (4, Arm.HEAD),
    (4, Arm.BASE),
]


def test_round_order_alternates_from_the_first_round() -> None:
    assert [round_order(number) for number in (1, 2, 3, 4)] == [
        (Arm.BASE, Arm.HEAD),
        (Arm.HEAD, Arm.BASE),
        (Arm.BASE, Arm.HEAD),
        (Arm.HEAD, Arm.BASE),
    ]
    with pytest.raises(ValueError, match="from 1"):
        round_order(0)


@pytest.mark.parametrize("kind", list(ComparisonKind))
def test_every_kind_is_queued_and_claimed_in_alternating_order(
    session: Session, kind: ComparisonKind
) -> None:
    base = candidate(session, "aaaaaaa")
    head = base if kind is ComparisonKind.CALIBRATION else candidate(session, "aaaaaaa", ["#43601"])
    comparison = create_comparison(
        session=session, base=base, head=head, cases=[CASE], rounds=4, max_rounds=4, purpose=kind
    )
    assert comparison.kind is kind
    agent = runner(session)
    claimed: list[Job] = []
    for minute in range(1, 10):
        job = workflow_jobs.claim(session=session, runner=agent, now=T0 + minute * STEP)
        if job is None:
            break
        claimed.append(job)
    assert [(job.comparison_round, job.arm) for job in claimed] == ALTERNATING
    assert len({job.priority for job in claimed}) == 1  # one place in the queue: the order is the ids'
    rounds = comparison_view(session=session, comparison_id=comparison.id).results[0].rounds
    assert [view.first for view in rounds] == [Arm.BASE, Arm.HEAD, Arm.BASE, Arm.HEAD]


def test_a_calibration_alternates_too(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=4
    )
    ran = run_queue(session, second_faster(0.0))
    assert [(job.comparison_round, job.arm) for job, _ in ran] == ALTERNATING
    assert comparison.state is ComparisonState.DONE


def alternating_change(job: Job, second: bool) -> float:
    """Head +6 % in odd rounds and -4 % in even ones: inconclusive, so more rounds are queued."""
    del second
    assert job.comparison_round is not None
    if job.arm is Arm.BASE:
        return 30.0
    return 30.0 * (1.06 if job.comparison_round % 2 else 0.96)


def test_rounds_added_while_inconclusive_continue_the_alternation(session: Session) -> None:
    base = candidate(session, "aaaaaaa")
    comparison = create_comparison(
        session=session, base=base, head=candidate(session, "aaaaaaa", ["#43601"]), cases=[CASE], max_rounds=4
    )
    ran = run_queue(session, alternating_change)
    assert comparison.rounds_scheduled == 4
    assert [(job.comparison_round, job.arm) for job, _ in ran] == ALTERNATING
    rounds = comparison_view(session=session, comparison_id=comparison.id).results[0].rounds
    assert [view.first for view in rounds] == [Arm.BASE, Arm.HEAD, Arm.BASE, Arm.HEAD]


def test_which_arm_ran_first_is_what_happened(session: Session) -> None:
    """Leases decide, the queue's order only on equal times; nothing started, nothing first."""
    comparison = create_comparison(
        session=session,
        base=candidate(session, "aaaaaaa"),
        head=candidate(session, "aaaaaaa", ["#43601"]),
        cases=[CASE],
        rounds=2,
        max_rounds=2,
    )
    agent = runner(session)

    def rounds() -> list[RoundView]:
        return comparison_view(session=session, comparison_id=comparison.id).results[0].rounds

    assert [view.first for view in rounds()] == [None, None]
    claimed = [workflow_jobs.claim(session=session, runner=agent, now=T0) for _ in range(3)]
    assert [(job.comparison_round, job.arm) for job in claimed if job is not None] == ALTERNATING[:3]
    assert [view.first for view in rounds()] == [Arm.BASE, Arm.HEAD]  # round 2: only head started
    workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert [view.first for view in rounds()] == [Arm.BASE, Arm.HEAD]  # equal times: the queue's order
    # A lease recorded earlier is a run that started earlier, whatever the queue said.
    round_two = rounds()[1]
    assert round_two.base.job is not None
    round_two.base.job.leased_at = T0 - STEP
    assert rounds()[1].first is Arm.BASE


def first_try_of(round_number: int, arm: Arm) -> Flag:
    """Flag the first run of one arm of one round (its re-run then measures it)."""
    seen: set[int] = set()

    def flag(job: Job) -> bool:
        if (job.comparison_round, job.arm) != (round_number, arm) or seen:
            return False
        seen.add(job.id)
        return True

    return flag


def test_a_re_run_of_a_flagged_run_starts_after_the_other_arm(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=2
    )
    ran = run_queue(session, second_faster(-3.0), flag=first_try_of(1, Arm.BASE))
    # Round 1's base was flagged and queued again last, behind round 2: head ran first in both.
    assert [(job.comparison_round, job.arm) for job, _ in ran] == [
        (1, Arm.BASE),
        (1, Arm.HEAD),
        (2, Arm.HEAD),
        (2, Arm.BASE),
        (1, Arm.BASE),
    ]
    rounds = comparison_view(session=session, comparison_id=comparison.id).results[0].rounds
    assert [view.first for view in rounds] == [Arm.HEAD, Arm.HEAD]
    assert rounds[0].base.job is not None
    assert rounds[0].base.job.id == ran[-1][0].id  # the re-run's value counts
    # Read in the planned order, round 1 would say the second run was 3 % slower and cancel round 2.
    calibration = stored_calibration(session)
    assert calibration.order_effect_pct == pytest.approx(-3.0, abs=0.3)
    assert calibration.order_effect_high_pct is not None
    assert calibration.order_effect_high_pct < 0


def stored_calibration(session: Session) -> Calibration:
    calibration = latest_calibration(
        session=session,
        case=get_current_case(session=session, slug=CASE),
        hardware=get_hardware_kind(session=session, name="H200"),
    )
    assert calibration is not None
    return calibration


def expected_effect(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Geometric-mean change of second over first (percent) and its 95 % paired t interval."""
    ratios = [math.log(second / first) for first, second in pairs]
    mean = statistics.fmean(ratios)
    critical = float(scipy_stats.t.ppf(0.975, len(ratios) - 1))
    half = critical * statistics.stdev(ratios) / math.sqrt(len(ratios))

    def pct(log_ratio: float) -> float:
        return (math.exp(log_ratio) - 1.0) * 100.0

    return pct(mean), pct(mean - half), pct(mean + half)


def planted_pairs(
    comparison: Comparison, session: Session, effect_pct: float
) -> dict[int, tuple[float, float]]:
    """Per round, the (first, second) values :func:`second_faster` planted, from who ran first."""
    pairs: dict[int, tuple[float, float]] = {}
    for view in comparison_view(session=session, comparison_id=comparison.id).results[0].rounds:
        first, second = (view.base, view.head) if view.first is Arm.BASE else (view.head, view.base)
        assert first.job is not None
        assert second.job is not None
        pairs[view.round] = (30.0 * wobble(first.job), 30.0 * (1.0 + effect_pct / 100.0) * wobble(second.job))
    return pairs


def test_a_calibration_measures_a_planted_order_effect_apart_from_its_noise(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=4
    )
    run_queue(session, second_faster(-3.0))
    calibration = stored_calibration(session)
    pairs = planted_pairs(comparison, session, -3.0)
    change, low, high = expected_effect(list(pairs.values()))
    assert change == pytest.approx(-3.0, abs=0.3)
    assert calibration.order_effect_pct == pytest.approx(change, rel=1e-9)
    assert calibration.order_effect_low_pct == pytest.approx(low, rel=1e-9)
    assert calibration.order_effect_high_pct == pytest.approx(high, rel=1e-9)
    assert high < 0  # told apart from noise
    # The noise is the spread about the order effect (0.2 % wobble), not the ±3 % the
    # alternating order puts between base and head.
    assert calibration.round_noise_pct < 0.5
    # Four counterbalanced rounds cancel the order effect in head vs base.
    (result,) = comparison.results
    assert result.change_pct is not None
    assert abs(result.change_pct) < 0.3


def test_an_interfered_round_is_left_out_of_the_order_effect(session: Session) -> None:
    comparison = create_calibration(
        session=session, candidate=candidate(session, "aaaaaaa"), cases=[CASE], rounds=3
    )
    quiet = second_faster(-3.0)

    def one_slow_run(job: Job, second: bool) -> float:
        return quiet(job, second) * (1.25 if job.comparison_round == 3 and second else 1.0)

    run_queue(session, one_slow_run)
    (result,) = comparison.results
    assert result.rounds_done == 6  # round 3 was set aside and the rounds doubled
    assert "round 3" in result.note
    calibration = stored_calibration(session)
    assert calibration.rounds == 5
    pairs = planted_pairs(comparison, session, -3.0)
    slowed = pairs[3]
    pairs.pop(3)
    change, low, high = expected_effect(list(pairs.values()))
    assert calibration.order_effect_pct == pytest.approx(change, rel=1e-9)
    assert calibration.order_effect_low_pct == pytest.approx(low, rel=1e-9)
    assert calibration.order_effect_high_pct == pytest.approx(high, rel=1e-9)
    with_it, _, _ = expected_effect([*pairs.values(), (slowed[0], slowed[1] * 1.25)])
    assert with_it - change > 2.0  # the slowed run would have hidden most of the effect


def test_order_effect_of_hand_built_rounds() -> None:
    rounds = [
        RoundValues(base=30.0, head=29.0),
        RoundValues(base=31.0, head=30.2),
        RoundValues(base=30.5, head=29.4),
    ]
    measured = order_effect(rounds, threshold_pct=2.0)
    assert measured is not None
    change, low, high = expected_effect([(pair.base, pair.head) for pair in rounds])
    assert (measured.change_pct, measured.ci_low_pct, measured.ci_high_pct) == pytest.approx(
        (change, low, high)
    )
    assert measured.ci_low_pct < measured.change_pct < measured.ci_high_pct
    assert order_effect(rounds[:1], threshold_pct=2.0) is None  # one round: no interval
