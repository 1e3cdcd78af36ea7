"""Detection delay: how many nightly runs after a change a detector, run on the prefix, first reports it.

For a change at commit ``c`` the detector sees ``values[: c + m]`` for ``m = 1 .. MAX_DELAY`` (the
first ``m`` runs at the new level) and the delay is the first ``m`` at which one of its detections
matches the change (same tolerance and direction as the full-series scoring). A change not
reported by ``c + MAX_DELAY`` counts as not seen in time.

perftrack is also run the way the service runs it: when the newest commit is a suspect, a
confirmation job re-runs that commit, and the re-run stays in the history from then on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.detection.dataset import LabelledSeries, TrueChange
from benchmarks.detection.peers import THRESHOLD_PCT, Flag
from benchmarks.detection.scoring import TOLERANCE
from tracker.statistics.changepoints import detect_changes

MAX_DELAY = 10


def _reports(flags: Sequence[Flag], change: TrueChange) -> bool:
    return any(
        abs(flag.index - change.index) <= TOLERANCE and flag.direction == change.direction for flag in flags
    )


def delay(
    detect: Callable[[Sequence[float]], list[Flag]], series: LabelledSeries, change: TrueChange
) -> int | None:
    """Runs after ``change`` until ``detect`` on the prefix reports it, or ``None`` past ``MAX_DELAY``."""
    for runs_after in range(1, MAX_DELAY + 1):
        if _reports(detect(series.values[: change.index + runs_after]), change):
            return runs_after
    return None


def perftrack_delay_with_reruns(series: LabelledSeries, change: TrueChange) -> tuple[int | None, int]:
    """perftrack's delay when a suspect newest commit is re-run once; also how many re-runs it took."""
    commits = [[value] for value in series.values[: change.index]]
    rerun: set[int] = set()
    for runs_after in range(1, MAX_DELAY + 1):
        newest = change.index + runs_after - 1
        commits.append([series.values[newest]])
        detection = detect_changes(commits, threshold_pct=THRESHOLD_PCT)
        suspect_at_end = any(not item.established for item in detection.changes)
        if suspect_at_end and newest not in rerun:
            rerun.add(newest)
            commits[-1].append(series.reruns[newest])
            detection = detect_changes(commits, threshold_pct=THRESHOLD_PCT)
        flags = [
            Flag(item.index, 1 if item.is_regression else -1)
            for item in detection.changes
            if item.established
        ]
        if _reports(flags, change):
            return runs_after, len(rerun)
    return None, len(rerun)
