"""Matching detections to labelled changes, and the figures of merit.

A detection matches a labelled change when it is within ``TOLERANCE`` commits of it and points the
same way; pairs are taken closest first, so each change matches at most one detection and each
detection at most one change. A matched detection is a true positive, an unmatched one a false
alarm. Changes below the 2 % threshold (the 1 % ones) are not expected to be caught: they are left
out of the recall denominator and a detection matching one is neither a true positive nor a false
alarm; their recall is still reported. One-night changes (a regression fixed by the next commit)
are treated the same way on full series, where one run per commit cannot tell them from a bad run,
and expected in streaming with confirmation (:class:`StreamTally`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.detection.confirming import StreamOutcome, Suspect
from benchmarks.detection.dataset import LabelledSeries, TrueChange
from benchmarks.detection.peers import THRESHOLD_PCT, Flag
from tracker.statistics.confirmation import ConfirmationOutcome

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

    def add(self, series: LabelledSeries, flags: Sequence[Flag], *, expect_one_night: bool = False) -> None:
        """Score one series' detections.

        One-night changes are not expected unless ``expect_one_night``: on full series, with one run
        per commit, they are indistinguishable from a bad run, so matching one is neither a true
        positive nor a false alarm, and they are left out of the by-size tables.
        """
        result = match(flags, series.changes)
        self.points += len(series.values)
        self.points_by_kind[series.kind] += len(series.values)
        found = {change_no for _, change_no in result.pairs}

        def expected(change: TrueChange) -> bool:
            return change.size_pct >= THRESHOLD_PCT and (expect_one_night or not change.one_night)

        for flag_no, change_no in result.pairs:
            if expected(series.changes[change_no]):
                self.true_positives += 1
                self.exact += flags[flag_no].index == series.changes[change_no].index
        self.false_alarms += len(result.false_alarms)
        self.false_alarms_by_kind[series.kind] += len(result.false_alarms)
        for change_no, change in enumerate(series.changes):
            self.expected += expected(change)
            if change.one_night and not expect_one_night:
                continue
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


@dataclass(slots=True)
class StreamTally:
    """Counts for streaming with paired confirmation over the dataset.

    Confirmed alerts are the detections. One-night changes are expected here (a confirmation run
    the night a regression appears sees it); sub-threshold changes are not, as in :class:`Tally`.
    A *neutral* alert has no labelled change (of any size) within ``TOLERANCE`` commits in its
    direction. For a labelled change that was not confirmed, ``missed_as`` says why: no suspect
    near it, or the outcome of the nearest suspect.
    """

    points: int = 0
    rounds: int = 0
    tally: Tally = field(default_factory=Tally)
    neutral_alerts: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_kind: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    one_night_found: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))
    one_night_total: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))
    lasting_found: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))
    lasting_total: dict[tuple[float, float], int] = field(default_factory=lambda: defaultdict(int))
    missed_as: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # The same by the change's size (lasting and one-night halves): (size, why) -> count.
    missed_by_size: dict[tuple[float, str], int] = field(default_factory=lambda: defaultdict(int))
    # Too-noisy suspects a lenient rule would have confirmed (see ``lenient``), on labelled changes
    # of at least the threshold that were missed, and on neutral commits.
    lenient_true: int = 0
    lenient_neutral: int = 0
    # Confirmed alerts beyond the first that match one labelled change (the same change twice).
    duplicates: int = 0

    def add(self, series: LabelledSeries, outcome: StreamOutcome) -> None:
        """Score one series' suspects."""
        self.points += outcome.points
        self.rounds += outcome.rounds
        kind = self.by_kind[series.kind]
        kind["points"] += outcome.points
        kind["rounds"] += outcome.rounds
        for suspect in outcome.suspects:
            self.outcomes[suspect.outcome.value] += 1
            kind[suspect.outcome.value] += 1
        alerts = [
            Flag(suspect.first_bad, suspect.direction)
            for suspect in outcome.with_outcome(ConfirmationOutcome.CONFIRMED)
        ]
        neutral = sum(
            not any(
                abs(alert.index - change.index) <= TOLERANCE and alert.direction == change.direction
                for change in series.changes
            )
            for alert in alerts
        )
        self.neutral_alerts += neutral
        kind["neutral_alerts"] += neutral
        self.tally.add(series, alerts, expect_one_night=True)
        found = {change_no for _, change_no in match(alerts, series.changes).pairs}
        for change in series.changes:
            twice = sum(
                abs(alert.index - change.index) <= TOLERANCE and alert.direction == change.direction
                for alert in alerts
            )
            self.duplicates += max(0, twice - 1)
        for change_no, change in enumerate(series.changes):
            cell = (series.noise_pct, change.size_pct)
            if change.one_night and change.direction > 0:
                self.one_night_total[cell] += 1
                self.one_night_found[cell] += change_no in found
            elif not change.one_night:
                self.lasting_total[cell] += 1
                self.lasting_found[cell] += change_no in found
            if change_no in found or change.size_pct < THRESHOLD_PCT:
                continue
            near = [
                suspect
                for suspect in outcome.suspects
                if abs(suspect.first_bad - change.index) <= TOLERANCE
                and suspect.direction == change.direction
            ]
            why = near[0].outcome.value if near else "no suspect"
            self.missed_as[why] += 1
            self.missed_by_size[(change.size_pct, why)] += 1
            self.lenient_true += any(lenient(suspect) for suspect in near)
        for suspect in outcome.with_outcome(ConfirmationOutcome.TOO_NOISY):
            self.lenient_neutral += lenient(suspect) and not any(
                abs(suspect.first_bad - change.index) <= TOLERANCE and suspect.direction == change.direction
                for change in series.changes
            )

    @property
    def neutral_per_1000(self) -> float:
        """Confirmed alerts on neutral commits per 1,000 nightly points."""
        return 1000.0 * self.neutral_alerts / self.points if self.points else 0.0

    @property
    def rounds_per_1000(self) -> float:
        """Paired rounds per 1,000 nightly points."""
        return 1000.0 * self.rounds / self.points if self.points else 0.0

    def recall_of_size(self, size: float) -> tuple[int, int]:
        """Changes of ``size`` percent found, and all of them (lasting ones and one-night halves)."""
        cells = [cell for cell in self.tally.total_by_cell if cell[1] == size]
        return (
            sum(self.tally.found_by_cell[cell] for cell in cells),
            sum(self.tally.total_by_cell[cell] for cell in cells),
        )

    def one_night_recall(self, min_size: float) -> float | None:
        """Recall of one-night regressions of at least ``min_size`` percent."""
        total = sum(count for cell, count in self.one_night_total.items() if cell[1] >= min_size)
        found = sum(count for cell, count in self.one_night_found.items() if cell[1] >= min_size)
        return found / total if total else None


# Detection lets an estimate count when it is within this share of the threshold (its default
# ``threshold_margin_share``); the lenient rule below borrows it.
_LENIENT_SHARE = 0.85


def lenient(suspect: Suspect) -> bool:
    """Whether a too-noisy suspect's final interval excludes zero in its direction and its estimate
    reaches 85 % of the threshold: what a rule like detection's own margin would have confirmed."""
    if suspect.outcome is not ConfirmationOutcome.TOO_NOISY or suspect.paired_pct is None:
        return False
    if suspect.ci_low_pct is None or suspect.ci_high_pct is None:
        return False
    if suspect.direction > 0:
        return suspect.ci_low_pct > 0 and suspect.paired_pct >= _LENIENT_SHARE * THRESHOLD_PCT
    return suspect.ci_high_pct < 0 and suspect.paired_pct <= -_LENIENT_SHARE * THRESHOLD_PCT
