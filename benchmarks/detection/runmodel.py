"""How one run of a series is drawn: the commit's code, the night's environment, the run's own noise.

A run's median step time is, in logs, the sum of

* the **code level** of the commit measured (what labelled changes move);
* the **environment** of the night it runs: slow drift, a load phase, the runner the fleet uses
  then (its level) — shared by every run that night, and no code change;
* the run's **own noise**: a log-normal factor with the night's run-to-run sigma (the runner's),
  a *bad run* now and then (the whole process +4 to +15 %), the far mode of a bimodal setup, and
  during a load phase a little extra per-run jitter (the load is never quite steady);
* inside the run, step jitter, slow steps and the step-0 compile outlier, which the median absorbs.

:func:`paired_round` draws what a confirmation measures: both arms (A = last good, B = first bad)
on one night, so they share its environment (a load phase's level is drawn once per round and
applies to both), while each arm's own noise is independent — exactly what paired rounds cancel
and what they do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracker.statistics.ab import RoundValues

STEP_JITTER = 0.004
SLOW_STEP_SHARE = 0.03
SLOW_STEP_SCALE = 0.02
COMPILE_FACTOR = (3.0, 10.0)
BAD_RUN_SHIFT = (0.04, 0.15)
# The median of n steps with jitter s moves by about 1.2533 s / sqrt(n) from run to run; the run
# factor makes up the rest of the series' noise.
WITHIN_RUN_SIGMA = 1.2533 * STEP_JITTER / math.sqrt(40.0)
# During a load phase: the load's strength varies from round to round (shared by both arms of a
# round, as a share of the phase's shift), and each run gets extra jitter of its own.
LOAD_ROUND_SPREAD = 0.2
LOAD_RUN_JITTER = 0.05


def run_sigma_for(noise_pct: float) -> float:
    """The run factor's sigma that gives run medians a coefficient of variation of ``noise_pct``."""
    return math.sqrt(max((noise_pct / 100.0) ** 2 - WITHIN_RUN_SIGMA**2, 0.0))


@dataclass(frozen=True, slots=True)
class RunModel:
    """Everything needed to draw a run of any commit on any night of one series (logs, per index).

    Commit ``i`` is measured by the nightly run of night ``i``; ``environment`` excludes load,
    which ``load`` holds apart (its strength varies per round and it adds jitter).
    """

    code_level: tuple[float, ...]  # ln(ms) of each commit's code, on a quiet night
    environment: tuple[float, ...]  # per night: drift and runner level, ln shift
    load: tuple[float, ...]  # per night: the load phase's ln shift (0 outside phases)
    run_sigma: tuple[float, ...]  # per night: the run factor's sigma (the runner's noise)
    bad_share: float
    mode_gap: float = 0.0
    far_share: float = 0.0

    def arm(self, commit: int, night: int, load_shift: float, rng: np.random.Generator) -> float:
        """One run of ``commit`` on ``night`` under a load of ``load_shift`` (ln): its median step (ms)."""
        shift = self.code_level[commit] + self.environment[night] + load_shift
        shift += rng.normal(0.0, self.run_sigma[night])
        if rng.random() < self.bad_share:
            shift += math.log1p(rng.uniform(*BAD_RUN_SHIFT))
        if self.mode_gap and rng.random() < self.far_share:
            shift += self.mode_gap
        if load_shift:
            shift += rng.normal(0.0, LOAD_RUN_JITTER * abs(self.load[night]))
        return _median_of_steps(shift, int(rng.integers(30, 51)), rng)

    def round_load(self, night: int, rng: np.random.Generator) -> float:
        """The load's strength during one round (both arms) on ``night``, as a ln shift."""
        load = self.load[night]
        return load * (1.0 + rng.normal(0.0, LOAD_ROUND_SPREAD)) if load else 0.0


def paired_round(model: RunModel, base: int, head: int, night: int, rng: np.random.Generator) -> RoundValues:
    """One confirmation round on ``night``: commit ``base`` (A) then commit ``head`` (B), fresh runs.

    Parameters
    ----------
    model
        The series' run model.
    base, head
        Commit indices: the last good and the first bad commit.
    night
        The night the confirmation runs (its environment applies to both arms).
    rng
        Source of the per-round and per-run randomness.

    Returns
    -------
    RoundValues
        The two arms' median step times (ms).
    """
    load = model.round_load(night, rng)
    first = model.arm(base, night, load, rng)
    return RoundValues(base=first, head=model.arm(head, night, load, rng))


def _median_of_steps(log_level: float, count: int, rng: np.random.Generator) -> float:
    times = np.exp(log_level + rng.normal(0.0, STEP_JITTER, size=count))
    slow = rng.random(count) < SLOW_STEP_SHARE
    times[slow] *= 1.0 + SLOW_STEP_SCALE * (1.0 + rng.pareto(1.5, size=int(slow.sum())))
    times[0] *= rng.uniform(*COMPILE_FACTOR)
    return float(np.median(times))


def nightly_runs(model: RunModel, rng: np.random.Generator) -> list[float]:
    """One run a night, each of the commit that landed that night (for hand-built series)."""
    return [
        model.arm(night, night, model.round_load(night, rng), rng) for night in range(len(model.code_level))
    ]
