"""Which alert a change already is: the pinning of a confirmed step, on the demo's offload case.

Built from plain objects: :func:`tracker.detection.alert_matching.matching_alert` reads the series'
commits, detection's changes and the series' alerts, and nothing else.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.factories import suspect_change
from tracker.detection.alert_matching import SeriesContext, matching_alert, retired_by_interference
from tracker.enums import AlertConfirmation, AlertStatus, Direction
from tracker.models import Alert, Commit
from tracker.series.state import SeriesCommit
from tracker.statistics.changepoints import Change, Detection

T0 = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
# The offload case on night 6 of a loaded demo (2026-12-04), ms per step: incident 1 landed at
# commit 2 and was first seen at 4, detection now places it at 3; the CFG speed-up at 5; incident 2
# landed between 6 and 7 (its commit skipped by the nightlies) and shows at 7.
LEVELS = [1.24, 1.25, 2.07, 2.11, 2.05, 1.31, 1.33, 1.76]


def commits() -> list[Commit]:
    return [
        Commit(
            id=index + 1,
            sha=f"{index:040x}",
            title=f"commit {index}",
            committed_at=T0 + dt.timedelta(hours=index),
        )
        for index in range(len(LEVELS))
    ]


def change(index: int) -> Change:
    return step(index, LEVELS[index - 1], LEVELS[index])


def step(index: int, before: float, after: float) -> Change:
    return suspect_change(index, before, after, runs_before=2)


def confirmed(
    alert_id: int, series: list[Commit], *, last_good: int, first_bad: int, culprit: int, pct: float
) -> Alert:
    return Alert(
        id=alert_id,
        direction=Direction.REGRESSION if pct > 0 else Direction.IMPROVEMENT,
        status=AlertStatus.OPEN,
        confirmation=AlertConfirmation.CONFIRMED,
        last_good_commit=series[last_good],
        last_good_commit_id=series[last_good].id,
        first_bad_commit=series[first_bad],
        first_bad_commit_id=series[first_bad].id,
        culprit_commit=series[culprit],
        culprit_commit_id=series[culprit].id,
        change_pct=pct,
        threshold_pct=2.0,
        evidence={"paired_change_pct": pct},
    )


def context(series: list[Commit], changes: list[Change], alerts: list[Alert]) -> SeriesContext:
    detection = Detection(
        changes=tuple(changes),
        outliers=(),
        noise=None,
        threshold_pct=2.0,
        model_threshold_pct=2.0,
        noise_threshold_pct=None,
    )
    session: Any = None  # matching reads no rows
    return SeriesContext(
        session=session,
        case=None,  # type: ignore[arg-type]
        hardware=None,  # type: ignore[arg-type]
        commits=[SeriesCommit(commit=commit, runs=[]) for commit in series],
        detection=detection,
        alerts=alerts,
        now=T0,
    )


def test_a_confirmed_step_is_not_re_placed_across_another_confirmed_step() -> None:
    series = commits()
    incident_1 = confirmed(3, series, last_good=1, first_bad=4, culprit=2, pct=66.2)
    speed_up = confirmed(5, series, last_good=4, first_bad=5, culprit=5, pct=-36.0)
    changes = [change(3), change(5), change(7)]
    found = context(series, changes, [incident_1, speed_up])
    # Incident 1 still matches where detection places it now, inside its range.
    assert matching_alert(found, changes[0]) is incident_1
    assert matching_alert(found, changes[1]) is speed_up
    # +32 % three commits after incident 1's first bad commit, of about its size in logs: without
    # the speed-up in between it would be incident 1 re-placed; with it, it is incident 2.
    assert matching_alert(found, changes[2]) is None


def test_without_a_step_in_between_a_re_placed_step_is_the_same_change() -> None:
    series = commits()
    incident_1 = confirmed(3, series, last_good=1, first_bad=4, culprit=2, pct=66.2)
    changes = [change(3), change(7)]
    assert matching_alert(context(series, changes, [incident_1]), changes[1]) is incident_1


def test_a_suspect_refuted_on_its_odd_last_good_run_is_asked_again_the_other_way() -> None:
    # The same loaded demo on night 7: the next commit (8, 1.58 ms) read as -10 % against the
    # nightly run of 7 (1.76 ms). Its rounds found 7 and 8 alike and 7's nightly run the odd one,
    # which left the series: against 6 the step at 8 is +19 %, the other way. The refuted
    # improvement's commit must not swallow it.
    series = [
        *commits(),
        Commit(id=9, sha=f"{8:040x}", title="commit 8", committed_at=T0 + dt.timedelta(hours=8)),
    ]
    refuted = Alert(
        id=9,
        direction=Direction.IMPROVEMENT,
        status=AlertStatus.INVALID,
        confirmation=AlertConfirmation.REFUTED,
        last_good_commit=series[7],
        last_good_commit_id=series[7].id,
        first_bad_commit=series[8],
        first_bad_commit_id=series[8].id,
        change_pct=-10.4,
        threshold_pct=2.0,
        evidence={"outlier_side": "last_good"},
    )
    kept = [*series[:7], series[8]]  # the odd run of 7 left the series
    rise = step(7, 1.33, 1.58)
    found = context(kept, [rise], [refuted])
    assert retired_by_interference(found, rise) is refuted
    # While its last good commit is still the one the rounds judged, it is not asked again.
    against_the_same = step(8, 1.50, 1.58)
    assert retired_by_interference(context(series, [against_the_same], [refuted]), against_the_same) is None
