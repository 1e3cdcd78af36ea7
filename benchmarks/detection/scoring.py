"""Matching detections to labelled changes, and the figures of merit.

A detection matches a labelled change when it is within ``TOLERANCE`` commits of it and points the
same way; pairs are taken closest first, so each change matches at most one detection and each
detection at most one change. A matched detection is a true positive, an unmatched one a false
alarm. Changes below the 2 % threshold (the 1 % ones) are not expected to be caught: they are left
out of the recall denominator and a detection matching one is neither a true positive nor a false
alarm; their recall is still reported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.detection.dataset import LabelledSeries, TrueChange
from benchmarks.detection.peers import THRESHOLD_PCT, Flag

TOLERANCE = 2


@dataclass(frozen=True, slots=True)
class Match:
    """Which detection matched which change (positions in their lists)."""

    pairs: tuple[tuple[int, int], ...]  # (detection, change)
    false_alarms: tuple[int, ...]


def match(flags: Sequence[Flag], changes: Sequence[TrueChange], tolerance: int = TOLERANCE) -> Match:
    """Pair detections with labelled changes, closest pairs first."""
    candidates = sorted(
        (abs(flag.index - change.index), flag_no, change_no)
        for flag_no, flag in enumerate(flags)
        for change_no, change in enumerate(changes)
        if abs(flag.index - change.index) <= tolerance and flag.direction == change.direction
    )
    used_flags: set[int] = set()
    used_changes: set[int] = set()
    pairs = []
    for _, flag_no, change_no in candidates:
        if flag_no in used_flags or change_no in used_changes:
            continue
        used_flags.add(flag_no)
        used_changes.add(change_no)
        pairs.append((flag_no, change_no))
    return Match(tuple(sorted(pairs)), tuple(no for no in range(len(flags)) if no not in used_flags))


@dataclass(slots=True)
class Tally:
    """Counts for one detector over the dataset."""

    points: int = 0
    true_positives: int = 0
    exact: int = 0
    false_alarms: int = 0
    expected: int = 0
    false_alarms_by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    points_by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    found_by_size: dict[float, int] = field(default_factory=lambda: defaultdict(int))
    total_by_size: dict[float, int] = field(default_factory=lambda: defaultdict(int))
    found_by_cell: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))
    total_by_cell: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))

    def add(self, series: LabelledSeries, flags: Sequence[Flag]) -> None:
        """Score one series' detections."""
        result = match(flags, series.changes)
        self.points += len(series.values)
        self.points_by_kind[series.kind] += len(series.values)
        found = {change_no for _, change_no in result.pairs}
        for flag_no, change_no in result.pairs:
            if series.changes[change_no].size_pct >= THRESHOLD_PCT:
                self.true_positives += 1
                self.exact += flags[flag_no].index == series.changes[change_no].index
        self.false_alarms += len(result.false_alarms)
        self.false_alarms_by_kind[series.kind] += len(result.false_alarms)
        for change_no, change in enumerate(series.changes):
            self.expected += change.size_pct >= THRESHOLD_PCT
            self.total_by_size[change.size_pct] += 1
            self.found_by_size[change.size_pct] += change_no in found
            cell = (series.noise_pct, change.size_pct)
            self.total_by_cell[cell] += 1
            self.found_by_cell[cell] += change_no in found

    @property
    def precision(self) -> float:
        """True positives over all counted detections."""
        counted = self.true_positives + self.false_alarms
        return self.true_positives / counted if counted else 1.0

    @property
    def recall(self) -> float:
        """Changes of at least the threshold that were found."""
        return self.true_positives / self.expected if self.expected else 1.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall."""
        total = self.precision + self.recall
        return 2.0 * self.precision * self.recall / total if total else 0.0

    @property
    def false_alarms_per_1000(self) -> float:
        """False alarms per 1,000 nightly points."""
        return 1000.0 * self.false_alarms / self.points if self.points else 0.0

    @property
    def exact_share(self) -> float:
        """Share of true positives flagged at exactly the first bad commit."""
        return self.exact / self.true_positives if self.true_positives else 0.0

    def recall_of(self, size: float, max_noise: float | None = None) -> float | None:
        """Recall of changes of one size, optionally only where the noise is at most ``max_noise``."""
        cells = [
            cell
            for cell in self.total_by_cell
            if cell[1] == size and (max_noise is None or cell[0] <= max_noise)
        ]
        total = sum(self.total_by_cell[cell] for cell in cells)
        return sum(self.found_by_cell[cell] for cell in cells) / total if total else None
