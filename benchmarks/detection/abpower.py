"""A/B power: how often ``compare_rounds`` gives the right verdict, simulated with known truth.

Each round runs both arms, each in a fresh process, and takes the median of ``REQUESTS`` requests'
step times. What moves a value, from the outside in:

* a per-round drift shared by both arms of the round (the node warmer or busier that minute; sd
  equal to the arm noise) — the reason rounds are paired;
* a per-arm process factor (a fresh process: compile, allocator, clocks), the bulk of the noise;
* per-request jitter (half the arm noise) with 5 % slow requests (+10 %), which the median absorbs.

``noise`` is the resulting standard deviation of one arm's round value around its round's drift,
in percent: the per-arm noise a prior describes. The prior is estimated the way the service would,
with :func:`tracker.statistics.noise.run_to_run_noise`, from a simulated 20-night history of the base (nights
are not paired, so the history's noise also holds the drift and overstates the paired noise).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tracker.enums import Verdict
from tracker.statistics.ab import NoisePrior, RoundValues, compare_rounds
from tracker.statistics.noise import run_to_run_noise

THRESHOLD_PCT = 2.0
NOISE_LEVELS_PCT = (0.3, 0.5, 1.0, 2.0)
TRUE_CHANGES_PCT = (1.0, 2.0, 5.0)
ROUND_COUNTS = (2, 4, 8)
REQUESTS = 5
HISTORY_RUNS = 20
_SLOW_REQUEST_SHARE = 0.05
_SLOW_REQUEST_FACTOR = 1.10
# The median of 5 requests with jitter s moves by about 0.536 s (simulated, normal jitter).
_MEDIAN_OF_5 = 0.536


@dataclass(frozen=True, slots=True)
class PowerCell:
    """Verdict shares for one true change, noise level, round count and prior choice."""

    change_pct: float
    noise_pct: float
    rounds: int
    with_prior: bool
    regression: float
    improvement: float
    no_change: float
    inconclusive: float

    @property
    def false_verdict(self) -> float:
        """Share of regression or improvement verdicts (wrong when the arms are the same)."""
        return self.regression + self.improvement


class _Simulator:
    def __init__(self, noise_pct: float, rng: np.random.Generator) -> None:
        self.rng = rng
        self.noise = noise_pct / 100.0
        self.request_sd = 0.5 * self.noise
        self.process_sd = math.sqrt(max(self.noise**2 - (_MEDIAN_OF_5 * self.request_sd) ** 2, 0.0))
        self.level_ms = math.exp(rng.uniform(math.log(30.0), math.log(300.0)))

    def arm(self, drift: float, change_pct: float) -> float:
        """One arm's round value: the median of the requests' step times (ms)."""
        requests = np.exp(
            math.log(self.level_ms * (1.0 + change_pct / 100.0))
            + drift
            + self.rng.normal(0.0, self.process_sd)
            + self.rng.normal(0.0, self.request_sd, size=REQUESTS)
        )
        requests[self.rng.random(REQUESTS) < _SLOW_REQUEST_SHARE] *= _SLOW_REQUEST_FACTOR
        return float(np.median(requests))

    def rounds(self, count: int, change_pct: float) -> list[RoundValues]:
        result = []
        for _ in range(count):
            drift = float(self.rng.normal(0.0, self.noise))
            result.append(RoundValues(base=self.arm(drift, 0.0), head=self.arm(drift, change_pct)))
        return result

    def prior(self) -> NoisePrior:
        """A prior from a history of unpaired nightly runs of the base."""
        history = [[self.arm(float(self.rng.normal(0.0, self.noise)), 0.0)] for _ in range(HISTORY_RUNS)]
        estimate = run_to_run_noise(history)
        assert estimate is not None
        return NoisePrior(noise_pct=estimate.cv_pct, dof=HISTORY_RUNS - 1)


def simulate(
    *,
    trials: int = 2000,
    seed: int = 20240612,
    changes: Sequence[float] = (0.0, *TRUE_CHANGES_PCT),
    noises: Sequence[float] = NOISE_LEVELS_PCT,
    round_counts: Sequence[int] = ROUND_COUNTS,
) -> list[PowerCell]:
    """Verdict shares for every cell, without a prior and (2 rounds only) with one."""
    cells = []
    root = np.random.SeedSequence(seed)
    plan = [
        (change, noise, rounds, with_prior)
        for change in changes
        for noise in noises
        for rounds in round_counts
        for with_prior in (False, True)
        if not with_prior or rounds == 2
    ]
    for (change, noise, rounds, with_prior), child in zip(plan, root.spawn(len(plan)), strict=True):
        simulator = _Simulator(noise, np.random.default_rng(child))
        counts = dict.fromkeys(Verdict, 0)
        for _ in range(trials):
            prior = simulator.prior() if with_prior else None
            verdict = compare_rounds(
                simulator.rounds(rounds, change), threshold_pct=THRESHOLD_PCT, prior=prior
            ).verdict
            counts[verdict] += 1
        cells.append(
            PowerCell(
                change_pct=change,
                noise_pct=noise,
                rounds=rounds,
                with_prior=with_prior,
                regression=counts[Verdict.REGRESSION] / trials,
                improvement=counts[Verdict.IMPROVEMENT] / trials,
                no_change=counts[Verdict.NO_CHANGE] / trials,
                inconclusive=counts[Verdict.INCONCLUSIVE] / trials,
            )
        )
    return cells
