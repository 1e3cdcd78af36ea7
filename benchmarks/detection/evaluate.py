"""Run every detector over the dataset (full series, streaming prefixes, streaming with paired
confirmation), in worker processes."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from benchmarks.detection.confirming import PRIOR_DOF, StreamOutcome, stream_with_confirmation
from benchmarks.detection.dataset import LabelledSeries
from benchmarks.detection.peers import THRESHOLD_PCT, Flag, detectors
from benchmarks.detection.scoring import StreamTally, Tally
from benchmarks.detection.streaming import delay, perftrack_delay_with_reruns

RERUN_NAME = "perftrack+rerun"


@dataclass(frozen=True, slots=True)
class SeriesResult:
    """One series: each detector's flags on the whole series, and its delay per labelled change."""

    flags: dict[str, list[Flag]]
    delays: dict[str, list[int | None]]  # per labelled change of at least the threshold
    reruns: int
    stream: StreamOutcome | None  # streaming with paired confirmation, when this series took part


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


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """Which series stream with paired confirmation (every ``every``-th; 0: none), and the prior."""

    every: int = 1
    prior_dof: int | None = PRIOR_DOF
    exclude_off_run: bool = True  # False: the old rule, see confirming.stream_with_confirmation


@dataclass(slots=True)
class Evaluation:
    """Everything the tables print."""

    scores: list[DetectorScore]
    reruns: int  # re-runs made by perftrack+rerun in the delay runs
    stream: StreamTally
    stream_series: int


def _evaluate(
    series: LabelledSeries, names: Sequence[str], streaming: bool, confirming: StreamPlan | None
) -> SeriesResult:
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
    stream = (
        stream_with_confirmation(
            series, prior_dof=confirming.prior_dof, exclude_off_run=confirming.exclude_off_run
        )
        if confirming is not None
        else None
    )
    return SeriesResult(flags=flags, delays=delays, reruns=reruns, stream=stream)


def evaluate(
    dataset: Sequence[LabelledSeries],
    *,
    streaming: bool = True,
    confirmation: StreamPlan | None = None,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Evaluation:
    """Score every available detector on ``dataset``, and perftrack streaming with confirmation."""
    chosen = [detector for detector in detectors() if detector.available]
    names = [detector.name for detector in chosen]
    scores = {detector.name: DetectorScore(detector.name, detector.config) for detector in chosen}
    scores[RERUN_NAME] = DetectorScore(
        RERUN_NAME, "perftrack, a suspect newest commit re-run once (streaming only)"
    )
    plan = confirmation or StreamPlan()
    confirming = [
        plan if plan.every > 0 and number % plan.every == 0 else None for number in range(len(dataset))
    ]
    streamed = sum(item is not None for item in confirming)
    evaluation = Evaluation(list(scores.values()), 0, StreamTally(), streamed)
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        results = pool.map(
            _evaluate,
            dataset,
            [names] * len(dataset),
            [streaming] * len(dataset),
            confirming,
            chunksize=2,
        )
        for series, result in zip(dataset, results, strict=True):
            for name, flags in result.flags.items():
                scores[name].tally.add(series, flags)
            for name, found in result.delays.items():
                scores[name].delays.extend(found)
            evaluation.reruns += result.reruns
            if result.stream is not None:
                evaluation.stream.add(series, result.stream)
            if progress is not None:
                progress(1)
    return evaluation
