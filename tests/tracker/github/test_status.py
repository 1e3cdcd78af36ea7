"""One commit status for a head measured by several comparisons (:func:`head_status`)."""

from __future__ import annotations

import pytest

from tracker.enums import ComparisonState
from tracker.github.status import head_status
from tracker.models import Comparison

DONE, FAILED, CANCELLED, RUNNING = (
    ComparisonState.DONE,
    ComparisonState.FAILED,
    ComparisonState.CANCELLED,
    ComparisonState.RUNNING,
)


@pytest.mark.parametrize(
    ("states", "expected", "linked"),
    [
        ([DONE], ("success", "no regression (0 improvement(s), 0 results)"), 1),
        ([DONE, RUNNING, CANCELLED], ("pending", "1 of 3 perf comparisons of this head running"), 2),
        ([DONE, CANCELLED], ("success", "no regression (0 improvement(s), 0 results)"), 1),
        ([FAILED, DONE, CANCELLED], ("error", "perf comparison 1 failed: nothing measured"), 1),
        ([CANCELLED, CANCELLED], ("error", "perf comparison 2 was cancelled"), 2),
    ],
)
def test_the_heads_status_is_pending_while_any_runs_then_the_worst_not_cancelled(
    states: list[ComparisonState], expected: tuple[str, str], linked: int
) -> None:
    comparisons = [Comparison(id=index, state=state) for index, state in enumerate(states, start=1)]
    state, description, deciding = head_status(comparisons)
    assert (state, description) == expected
    assert deciding.id == linked
