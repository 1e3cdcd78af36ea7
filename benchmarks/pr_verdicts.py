"""How often a PR comparison calls a change that is not there, and how often it calls one that is.

    python benchmarks/pr_verdicts.py [--trials 2000] [--noise 1.0,2.2] [--seed 1]

Simulates the service's PR comparison end to end in numbers only: paired rounds of log-normal
per-arm noise, judged by :func:`tracker.statistics.ab.compare_rounds` with a calibrated prior of
four degrees of freedom and :func:`tracker.statistics.one_round.held_without_extreme_round`, with
more rounds while inconclusive (2 → 4 → 8, the bot's cap). For each per-arm noise it prints the
share of comparisons called a regression or improvement for true changes of 0, 3 and 5 % (the
first is the false-call rate), and the rounds they took; ``--call-confidence 0.99`` also asks the
99 % interval to exclude zero before a call (a what-if, not what the service does).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tracker.enums import Verdict  # noqa: E402
from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues, compare_rounds  # noqa: E402
from tracker.statistics.one_round import held_without_extreme_round  # noqa: E402

THRESHOLD_PCT = 2.0
ROUNDS = (2, 4, 8)
CALLS = (Verdict.REGRESSION, Verdict.IMPROVEMENT)


def _judge(rounds: list[RoundValues], prior: NoisePrior, call_confidence: float | None) -> ComparisonStats:
    stats = compare_rounds(rounds, threshold_pct=THRESHOLD_PCT, prior=prior)
    stats = held_without_extreme_round(rounds, stats, threshold_pct=THRESHOLD_PCT, prior=prior)
    if stats.verdict in CALLS and call_confidence is not None:
        strict = compare_rounds(rounds, threshold_pct=THRESHOLD_PCT, prior=prior, confidence=call_confidence)
        low, high = strict.ci_low_pct or 0.0, strict.ci_high_pct or 0.0
        if not (low > 0 if stats.verdict is Verdict.REGRESSION else high < 0):
            return dataclasses.replace(stats, verdict=Verdict.INCONCLUSIVE)
    return stats


def one_comparison(
    true_pct: float, noise_pct: float, rng: np.random.Generator, call_confidence: float | None
) -> tuple[bool, int]:
    """Whether a comparison of a ``true_pct`` change called one, and the rounds it ran."""
    prior = NoisePrior(noise_pct=noise_pct, dof=4)
    rounds: list[RoundValues] = []
    for wanted in ROUNDS:
        while len(rounds) < wanted:
            base = 100.0 * math.exp(rng.normal(0.0, noise_pct / 100.0))
            head = 100.0 * (1.0 + true_pct / 100.0) * math.exp(rng.normal(0.0, noise_pct / 100.0))
            rounds.append(RoundValues(base=base, head=head))
        verdict = _judge(rounds, prior, call_confidence).verdict
        if verdict is not Verdict.INCONCLUSIVE:
            return verdict in CALLS, wanted
    return False, ROUNDS[-1]


def main() -> int:
    """Print the call rates per noise and true change."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--noise", default="1.0,2.2", help="per-arm noise, percent, comma-separated")
    parser.add_argument("--call-confidence", type=float, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for noise in (float(text) for text in args.noise.split(",")):
        cells = []
        for true in (0.0, 3.0, 5.0):
            outcomes = [one_comparison(true, noise, rng, args.call_confidence) for _ in range(args.trials)]
            called = sum(hit for hit, _ in outcomes) / len(outcomes)
            rounds = statistics.fmean(used for _, used in outcomes)
            cells.append(f"true {true:g} %: called {called:.3f}, {rounds:.1f} rounds")
        print(f"per-arm noise {noise:g} %: " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
