"""A seeded, labelled dataset of nightly series in perftrack's shape.

Each commit of a series is measured by one nightly run: 30–50 denoise steps of a 30–300 ms model,
summarised as perftrack does, by the run's median step time. What moves a run, from the inside out:

* step jitter (0.4 % per step), a heavy tail of slow steps (3 % of steps, Pareto-distributed
  extra time) and a step-0 compile outlier (3–10×): the median ignores them, as it should;
* run-to-run noise, a log-normal factor per run, set so that the run medians have the series'
  coefficient of variation (0.3, 0.5, 1 or 2 %);
* bad nights: 1–4 % of runs, independently, are shifted as a whole by +4 to +15 %.

Series kinds and their labels:

``flat``            no change.
``drift``           a slow linear drift of 2–5 % over the whole series, either way: no change.
``bimodal``         every run lands in one of two modes 2–4 % apart (the far one with probability
                    0.2–0.5, independently per run): no change.
``step``            one change of ±1, 2, 3, 5, 9 or 20 % (in log terms, so −2 % is ``1/1.02``).
``regression_fix``  a regression of 2–20 % and, 5–25 commits later, the fix back to the old level:
                    two labelled changes of the same nominal size.

Changes sit at least 12 commits after the start and 10 before the end, so the full-series figures
are about changes with a settled level on both sides; how fast a change is seen at the end of a
series is the streaming delay's business. Every commit also has a second run (``reruns``): the
re-run a confirmation job would make, used only by the streaming delay of perftrack with re-runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

NOISE_LEVELS_PCT = (0.3, 0.5, 1.0, 2.0)
CHANGE_SIZES_PCT = (1.0, 2.0, 3.0, 5.0, 9.0, 20.0)
FIX_SIZES_PCT = (2.0, 3.0, 5.0, 9.0, 20.0)

SeriesKind = Literal["flat", "drift", "bimodal", "step", "regression_fix"]

_STEP_JITTER = 0.004
_SLOW_STEP_SHARE = 0.03
_SLOW_STEP_SCALE = 0.02
_COMPILE_FACTOR = (3.0, 10.0)
_BAD_NIGHT_SHARE = (0.01, 0.04)
_BAD_NIGHT_SHIFT = (0.04, 0.15)
_FIRST_CHANGE = 12
_LAST_CHANGE_FROM_END = 10


@dataclass(frozen=True, slots=True)
class TrueChange:
    """A labelled change: ``index`` is the first commit at the new level."""

    index: int
    size_pct: float
    direction: int  # +1 slower (a regression), -1 faster

    @property
    def log_shift(self) -> float:
        """The change as a shift of ``ln(value)``."""
        return self.direction * math.log1p(self.size_pct / 100.0)


@dataclass(frozen=True, slots=True)
class LabelledSeries:
    """One nightly series and what is true about it."""

    name: str
    kind: SeriesKind
    noise_pct: float
    values: tuple[float, ...]  # per commit, the nightly run's median step time (ms)
    reruns: tuple[float, ...]  # per commit, a second run of the same commit (a confirmation)
    changes: tuple[TrueChange, ...]
    bad_nights: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DatasetShape:
    """How many series of each kind: per noise level, and for changes per noise level and size."""

    steps_per_cell: int = 14
    fixes_per_cell: int = 4
    flat_per_noise: int = 20
    drift_per_noise: int = 10
    bimodal_per_noise: int = 10
    min_length: int = 60
    max_length: int = 150


def make_dataset(seed: int = 20240611, shape: DatasetShape | None = None) -> list[LabelledSeries]:
    """Every series of the benchmark, in a fixed order; the same seed gives the same numbers."""
    shape = shape or DatasetShape()
    plan: list[tuple[SeriesKind, float, float]] = []
    for noise in NOISE_LEVELS_PCT:
        plan += [("flat", noise, 0.0)] * shape.flat_per_noise
        plan += [("drift", noise, 0.0)] * shape.drift_per_noise
        plan += [("bimodal", noise, 0.0)] * shape.bimodal_per_noise
        for size in CHANGE_SIZES_PCT:
            plan += [("step", noise, size)] * shape.steps_per_cell
        for size in FIX_SIZES_PCT:
            plan += [("regression_fix", noise, size)] * shape.fixes_per_cell
    root = np.random.SeedSequence(seed)
    return [
        _make_series(
            f"{kind}-{noise:g}-{size:g}-{number}", kind, noise, size, np.random.default_rng(child), shape
        )
        for number, ((kind, noise, size), child) in enumerate(zip(plan, root.spawn(len(plan)), strict=True))
    ]


def _make_series(
    name: str,
    kind: SeriesKind,
    noise_pct: float,
    size_pct: float,
    rng: np.random.Generator,
    shape: DatasetShape,
) -> LabelledSeries:
    length = int(rng.integers(shape.min_length, shape.max_length + 1))
    base_ms = math.exp(rng.uniform(math.log(30.0), math.log(300.0)))
    level = np.full(length, math.log(base_ms))
    changes: list[TrueChange] = []
    last = length - _LAST_CHANGE_FROM_END
    if kind == "step":
        index = int(rng.integers(_FIRST_CHANGE, last + 1))
        changes.append(TrueChange(index, size_pct, 1 if rng.random() < 0.5 else -1))
    elif kind == "regression_fix":
        gap = int(rng.integers(5, 26))
        index = int(rng.integers(_FIRST_CHANGE, last - gap + 1))
        changes += [TrueChange(index, size_pct, 1), TrueChange(index + gap, size_pct, -1)]
    elif kind == "drift":
        total = rng.uniform(0.02, 0.05) * (1 if rng.random() < 0.5 else -1)
        level += np.linspace(0.0, math.log1p(total), length)
    for change in changes:
        level[change.index :] += change.log_shift
    mode_gap, far_share = 0.0, 0.0
    if kind == "bimodal":
        mode_gap, far_share = math.log1p(rng.uniform(0.02, 0.04)), rng.uniform(0.2, 0.5)
    bad_share = rng.uniform(*_BAD_NIGHT_SHARE)
    nightly, bad = _runs(level, noise_pct, bad_share, mode_gap, far_share, rng)
    reruns, _ = _runs(level, noise_pct, bad_share, mode_gap, far_share, rng)
    return LabelledSeries(
        name=name,
        kind=kind,
        noise_pct=noise_pct,
        values=tuple(nightly),
        reruns=tuple(reruns),
        changes=tuple(changes),
        bad_nights=tuple(int(index) for index in np.flatnonzero(bad)),
    )


def _runs(
    level: np.ndarray,
    noise_pct: float,
    bad_share: float,
    mode_gap: float,
    far_share: float,
    rng: np.random.Generator,
) -> tuple[list[float], np.ndarray]:
    """One run per commit: per-step times around the commit's level, summarised by their median."""
    length = level.size
    steps = rng.integers(30, 51, size=length)
    # The median of n steps with jitter s moves by about 1.2533 s / sqrt(n) from run to run; the
    # run factor makes up the rest of the series' noise.
    within = 1.2533 * _STEP_JITTER / math.sqrt(40.0)
    run_sigma = math.sqrt(max((noise_pct / 100.0) ** 2 - within**2, 0.0))
    run_shift = rng.normal(0.0, run_sigma, size=length)
    bad = rng.random(length) < bad_share
    run_shift[bad] += np.log1p(rng.uniform(*_BAD_NIGHT_SHIFT, size=int(bad.sum())))
    if mode_gap:
        run_shift += mode_gap * (rng.random(length) < far_share)
    medians = []
    for commit in range(length):
        count = int(steps[commit])
        times = np.exp(level[commit] + run_shift[commit] + rng.normal(0.0, _STEP_JITTER, size=count))
        slow = rng.random(count) < _SLOW_STEP_SHARE
        times[slow] *= 1.0 + _SLOW_STEP_SCALE * (1.0 + rng.pareto(1.5, size=int(slow.sum())))
        times[0] *= rng.uniform(*_COMPILE_FACTOR)
        medians.append(float(np.median(times)))
    return medians, bad
