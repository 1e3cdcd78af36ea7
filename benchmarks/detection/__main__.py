"""Run the detection-quality benchmark: ``python -m benchmarks.detection [--quick] [--seed N]``."""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.progress import Progress

from benchmarks.detection.abpower import simulate
from benchmarks.detection.confirming import PRIOR_DOF
from benchmarks.detection.dataset import DatasetShape, make_dataset
from benchmarks.detection.evaluate import StreamPlan, evaluate
from benchmarks.detection.peers import detectors
from benchmarks.detection.report import (
    dataset_summary,
    detection_table,
    false_alarm_table,
    perftrack_cells,
    power_tables,
    recall_table,
    stream_tables,
)
from tracker.statistics.paired_rounds import ConfirmationPolicy

# --quick streams with confirmation through every third series (a third of every kind).
QUICK_STREAM_EVERY = 3


def _prior_dof(text: str) -> int | None:
    return None if text == "none" else int(text)


def main(argv: list[str] | None = None) -> int:
    """Generate the dataset, run every detector and the A/B simulation, print the tables."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.detection", description=__doc__)
    parser.add_argument("--seed", type=int, default=20240611, help="dataset seed")
    parser.add_argument("--ab-seed", type=int, default=20240612, help="A/B simulation seed")
    parser.add_argument("--trials", type=int, default=2000, help="A/B comparisons per cell")
    parser.add_argument("--scale", type=int, default=1, help="multiply the number of series of each kind")
    parser.add_argument("--no-streaming", action="store_true", help="skip the detection-delay runs")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: CPUs)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tenth of the A/B trials, no delay runs, confirmation streaming on every third series",
    )
    parser.add_argument(
        "--prior-dof",
        type=_prior_dof,
        default=PRIOR_DOF,
        help=f"weight of the series' noise as the confirmation prior, or 'none' (default {PRIOR_DOF})",
    )
    parser.add_argument(
        "--stream-every",
        type=int,
        default=None,
        help="stream with confirmation through every N-th series (0: none; default 1, 3 with --quick)",
    )
    parser.add_argument(
        "--streaming-only",
        action="store_true",
        help="only streaming with paired confirmation (every series unless --stream-every): its tables",
    )
    parser.add_argument(
        "--exclude-first-bad",
        action="store_true",
        help="what-if (the old rule): a refuted suspect always excludes the first bad commit's "
        "nightly run, not the one farther from its paired arm",
    )
    args = parser.parse_args(argv)
    console = Console(width=200)
    errors = Console(stderr=True)
    started = time.monotonic()
    dataset = make_dataset(args.seed, DatasetShape().scaled(args.scale))
    every = args.stream_every if args.stream_every is not None else QUICK_STREAM_EVERY if args.quick else 1
    for detector in detectors():
        if not detector.available:
            errors.print(f"[yellow]{detector.name} is not installed: pip install -e '.[bench]'[/yellow]")
    with Progress(console=errors, transient=True) as progress:
        task = progress.add_task("detectors over the series", total=len(dataset))
        evaluation = evaluate(
            dataset,
            streaming=not (args.no_streaming or args.quick or args.streaming_only),
            confirmation=StreamPlan(
                every=every, prior_dof=args.prior_dof, exclude_off_run=not args.exclude_first_bad
            ),
            workers=args.workers,
            progress=lambda done: progress.advance(task, done),
        )
        trials = args.trials // 10 if args.quick else args.trials
        if not args.streaming_only:
            progress.add_task("A/B simulation", total=None)
        cells = [] if args.streaming_only else simulate(trials=trials, seed=args.ab_seed)
    dataset_summary(console, dataset)
    for detector in detectors():
        console.print(f"  {detector.name}: {detector.config}")
    console.print()
    scores = evaluation.scores
    detection_table(console, scores)
    console.print(
        f"perftrack+rerun: {evaluation.reruns} confirmation re-runs over all prefixes of the delay runs"
    )
    console.print()
    if evaluation.stream_series:
        prior = (
            "none"
            if args.prior_dof is None
            else f"the series' noise (detection's estimate, at most {args.prior_dof} degrees of freedom; "
            f"the judgement weighs it as at most {ConfirmationPolicy().max_prior_dof})"
        )
        if args.exclude_first_bad:
            prior += "; what-if: a refutation always excludes the first bad commit's run"
        stream_tables(console, evaluation.stream, evaluation.stream_series, prior)
    console.print()
    if args.streaming_only:
        errors.print(f"done in {time.monotonic() - started:.0f} s")
        return 0
    recall_table(console, scores)
    console.print()
    perftrack_cells(console, scores[0])
    console.print()
    false_alarm_table(console, scores)
    console.print()
    console.print(f"A/B simulation: {trials} comparisons per cell, seed {args.ab_seed}")
    power_tables(console, cells)
    errors.print(f"done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
