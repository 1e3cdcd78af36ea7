"""Run every detector over the dataset (full series and streaming prefixes), in worker processes."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from benchmarks.detection.dataset import LabelledSeries
from benchmarks.detection.peers import THRESHOLD_PCT, Flag, detectors
from benchmarks.detection.scoring import Tally
from benchmarks.detection.streaming import delay, perftrack_delay_with_reruns

RERUN_NAME = "perftrack+rerun"


@dataclass(frozen=True, slots=True)
class SeriesResult:
    """One series: each detector's flags on the whole series, and its delay per labelled change."""

    flags: dict[str, list[Flag]]
    delays: dict[str, list[int | None]]  # per labelled change of at least the threshold
    reruns: int


@dataclass(slots=True)
class DetectorScore:
    """Everything printed about one detector."""

    name: str
    config: str
    tally: Tally = field(default_factory=Tally)
    delays: list[int | None] = field(default_factory=list)

    @property
    def seen_in_time(self) -> float:
        """Share of changes reported within the streaming horizon."""
        return sum(value is not None for value in self.delays) / len(self.delays) if self.delays else 0.0

    @property
    def median_delay(self) -> float | None:
        """Median runs until reported, over the changes reported in time."""
        seen = [value for value in self.delays if value is not None]
        return float(statistics.median(seen)) if seen else None

    @property
    def mean_delay(self) -> float | None:
        """Mean runs until reported, over the changes reported in time."""
        seen = [value for value in self.delays if value is not None]
        return statistics.fmean(seen) if seen else None


def _evaluate(series: LabelledSeries, names: Sequence[str], streaming: bool) -> SeriesResult:
    available = {detector.name: detector.detect for detector in detectors() if detector.name in names}
    flags = {name: detect(series.values) for name, detect in available.items()}
    delays: dict[str, list[int | None]] = {name: [] for name in [*available, RERUN_NAME]}
    reruns = 0
    if streaming:
        for change in series.changes:
            if change.size_pct < THRESHOLD_PCT:
                continue
            for name, detect in available.items():
                delays[name].append(delay(detect, series, change))
            found, used = perftrack_delay_with_reruns(series, change)
            delays[RERUN_NAME].append(found)
            reruns += used
    return SeriesResult(flags=flags, delays=delays, reruns=reruns)


def evaluate(
    dataset: Sequence[LabelledSeries],
    *,
    streaming: bool = True,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[DetectorScore], int]:
    """Score every available detector on ``dataset``; also the re-runs perftrack's streaming mode made."""
    chosen = [detector for detector in detectors() if detector.available]
    names = [detector.name for detector in chosen]
    scores = {detector.name: DetectorScore(detector.name, detector.config) for detector in chosen}
    scores[RERUN_NAME] = DetectorScore(
        RERUN_NAME, "perftrack, a suspect newest commit re-run once (streaming only)"
    )
    reruns = 0
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        results = pool.map(
            _evaluate, dataset, [names] * len(dataset), [streaming] * len(dataset), chunksize=4
        )
        for series, result in zip(dataset, results, strict=True):
            for name, flags in result.flags.items():
                scores[name].tally.add(series, flags)
            for name, found in result.delays.items():
                scores[name].delays.extend(found)
            reruns += result.reruns
            if progress is not None:
                progress(1)
    return list(scores.values()), reruns
