"""What paired confirmation could reach if detection were perfect: every labelled change a suspect.

``python -m benchmarks.detection.oracle [--seed N] [--caps 16,32,64] [--quick]``

The streaming benchmark (:mod:`benchmarks.detection.confirming`) misses most 2 % changes before
confirmation: they never become suspects. This asks the other half of the question. Every
labelled change of at least 2 % is handed to the confirmation **on the night it lands, at its
exact commit** (last good = the commit before), with the series' true run-to-run noise as the
prior — an oracle no detector has — and the rounds are drawn and judged exactly as the service
does (:func:`benchmarks.detection.confirming.confirm`). For each cap on the rounds it prints the
recall by size and noise, and the paired rounds per 1,000 nightly points the oracle suspects
alone cost (a real detector adds its neutral suspects on top).

Recall here is an upper bound for any detector that runs one job a night and confirms with
paired rounds under that cap: a real one finds fewer suspects, later, at a less exact commit,
with a worse prior.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.detection.confirming import PRIOR_DOF, confirm
from benchmarks.detection.dataset import DatasetShape, LabelledSeries, make_dataset
from tracker.statistics.ab import NoisePrior
from tracker.statistics.confirmation import ConfirmationOutcome
from tracker.statistics.paired_rounds import ConfirmationPolicy

SIZES = (2.0, 3.0, 5.0)


@dataclass(frozen=True, slots=True)
class OracleResult:
    """One labelled change confirmed under one cap."""

    size_pct: float
    noise_pct: float
    one_night: bool
    confirmed: bool
    rounds: int


def oracle_confirmations(series: LabelledSeries, policy: ConfirmationPolicy, seed: int) -> list[OracleResult]:
    """Confirm each labelled change of ``series`` at its own commit on its own night."""
    rng = np.random.default_rng([series.draw_seed, seed, policy.max_rounds])
    prior = NoisePrior(noise_pct=series.noise_pct, dof=PRIOR_DOF)
    results = []
    for change in series.changes:
        if change.size_pct < SIZES[0] or change.index < 1:
            continue
        outcome, rounds, _ = confirm(
            series,
            last_good=change.index - 1,
            first_bad=change.index,
            night=change.index,
            regression=change.direction > 0,
            prior=prior,
            policy=policy,
            rng=rng,
        )
        results.append(
            OracleResult(
                size_pct=change.size_pct,
                noise_pct=series.noise_pct,
                one_night=change.one_night,
                confirmed=outcome is ConfirmationOutcome.CONFIRMED,
                rounds=len(rounds),
            )
        )
    return results


def _recall(results: Sequence[OracleResult], size: float, noise: float | None = None) -> str:
    chosen = [r for r in results if r.size_pct == size and (noise is None or r.noise_pct == noise)]
    if not chosen:
        return ""
    found = sum(r.confirmed for r in chosen)
    return f"{found / len(chosen):.2f} ({found}/{len(chosen)})"


def main(argv: list[str] | None = None) -> int:
    """Print the oracle's recall and rounds per cap."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.detection.oracle", description=__doc__)
    parser.add_argument("--seed", type=int, default=20240611, help="dataset seed")
    parser.add_argument("--caps", default="16,32,64", help="caps on the paired rounds, comma-separated")
    parser.add_argument("--quick", action="store_true", help="every third series (a third of every kind)")
    args = parser.parse_args(argv)
    console = Console()
    dataset = make_dataset(args.seed, DatasetShape())
    if args.quick:
        dataset = dataset[::3]
    points = sum(len(series.values) for series in dataset)
    noises = sorted({series.noise_pct for series in dataset})
    table = Table(title=f"every labelled change a suspect at its commit (seed {args.seed}, {points} points)")
    table.add_column("cap")
    for size in SIZES:
        table.add_column(f"recall {size:g} %", justify="right")
    table.add_column("2 % by run noise " + " / ".join(f"{n:g}" for n in noises), justify="right")
    table.add_column("rounds /1000 points", justify="right")
    for cap in (int(text) for text in args.caps.split(",")):
        policy = ConfirmationPolicy(max_rounds=cap)
        results = [r for series in dataset for r in oracle_confirmations(series, policy, args.seed)]
        by_noise = " / ".join(_recall(results, SIZES[0], noise).split(" ")[0] or "-" for noise in noises)
        table.add_row(
            str(cap),
            *(_recall(results, size) for size in SIZES),
            by_noise,
            f"{1000 * sum(r.rounds for r in results) / points:.0f}",
        )
    console.print(table)
    kinds = collections.Counter((r.size_pct, r.one_night) for r in results)
    console.print(
        "changes per size (lasting + one-night halves): "
        + ", ".join(f"{size:g} %: {kinds[(size, False)]} + {kinds[(size, True)]}" for size in SIZES)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
