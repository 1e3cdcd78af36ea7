"""A seeded, labelled dataset of nightly series in perftrack's shape.

Each commit of a series is measured by one nightly run on the night it lands (commit ``i`` on night
``i``): 30–50 denoise steps of a 30–300 ms model, summarised as perftrack does, by the run's median
step time. What moves a run (:mod:`benchmarks.detection.runmodel`): the commit's code level; the
night's environment (drift, a load phase, the runner in use); the run's own noise, log-normal, set
so that run medians have the series' coefficient of variation (0.3, 0.5, 1 or 2 %), with a *bad
run* now and then (1–4 % of runs, independently, the whole run +4 to +15 %); and step-level noise
(jitter, slow steps, a compile outlier) that the median absorbs.

Series kinds and their labels:

``flat``            no change.
``drift``           a slow linear drift of 2–5 % over the whole series, either way: no change
                    (the machine drifts, not the code).
``bimodal``         every run lands in one of two modes 2–4 % apart (the far one with probability
                    0.2–0.5, independently per run): no change.
``step``            one change of ±1, 2, 3, 5, 9 or 20 % (in log terms, so −2 % is ``1/1.02``).
``regression_fix``  a regression of 2–20 % and, 5–25 commits later, the fix back to the old level:
                    two labelled changes of the same nominal size.
``load``            1–3 on/off load phases of 3–10 nights, every run +5 to +30 % slower while one
                    lasts (another tenant on the node), half of the series on top of a 2–5 % drift:
                    no change, since no commit changed anything.
``one_night``       a regression of 2–20 % at commit ``c``, fixed by commit ``c + 1``: two labelled
                    changes marked ``one_night`` (the regression and its fix). One nightly run
                    cannot tell it from a bad run, so full-series scoring does not expect it; a
                    confirmation run the night it appears can, and streaming scoring expects it.
``runner_change``   the fleet switches runner once: from that night the level moves by ±3–8 % and
                    the run-to-run noise by a factor of 0.5–2: no change (the code did not change;
                    paired rounds, both arms on one runner, refute it).

Changes sit at least 12 commits after the start and 10 before the end, so the full-series figures
are about changes with a settled level on both sides. Every commit also has a second run
(``reruns``) on its own night: the single confirmation re-run the service made before paired rounds,
used only by the streaming delay of ``perftrack+rerun``. Paired rounds are drawn on demand
(:func:`benchmarks.detection.runmodel.paired_round`) from the series' ``model``.

The new kinds (``load``, ``one_night``, ``runner_change``) come after the original ones in the plan,
so the original series are drawn exactly as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from benchmarks.detection.runmodel import (
    BAD_RUN_SHIFT,
    COMPILE_FACTOR,
    LOAD_ROUND_SPREAD,
    LOAD_RUN_JITTER,
    SLOW_STEP_SCALE,
    SLOW_STEP_SHARE,
    STEP_JITTER,
    RunModel,
    run_sigma_for,
)

NOISE_LEVELS_PCT = (0.3, 0.5, 1.0, 2.0)
CHANGE_SIZES_PCT = (1.0, 2.0, 3.0, 5.0, 9.0, 20.0)
FIX_SIZES_PCT = (2.0, 3.0, 5.0, 9.0, 20.0)

SeriesKind = Literal[
    "flat", "drift", "bimodal", "step", "regression_fix", "load", "one_night", "runner_change"
]
KINDS: tuple[SeriesKind, ...] = (
    "flat",
    "drift",
    "bimodal",
    "step",
    "regression_fix",
    "load",
    "one_night",
    "runner_change",
)

_BAD_RUN_SHARE = (0.01, 0.04)
_FIRST_CHANGE = 12
_LAST_CHANGE_FROM_END = 10
_LOAD_PHASES = (1, 3)
_LOAD_NIGHTS = (3, 10)
_LOAD_SHIFT = (0.05, 0.30)
_LOAD_GAP = 5  # quiet nights at least between two load phases
_RUNNER_LEVEL = (0.03, 0.08)
_RUNNER_NOISE_FACTOR = (0.5, 2.0)


@dataclass(frozen=True, slots=True)
class TrueChange:
    """A labelled change: ``index`` is the first commit at the new level.

    ``one_night`` marks both halves of a regression fixed by the very next commit.
    """

    index: int
    size_pct: float
    direction: int  # +1 slower (a regression), -1 faster
    one_night: bool = False

    @property
    def log_shift(self) -> float:
        """The change as a shift of ``ln(value)``."""
        return self.direction * math.log1p(self.size_pct / 100.0)


@dataclass(frozen=True, slots=True)
class LabelledSeries:
    """One nightly series, what is true about it, and how to draw more runs of it."""

    name: str
    kind: SeriesKind
    noise_pct: float
    values: tuple[float, ...]  # per commit, the nightly run's median step time (ms)
    reruns: tuple[float, ...]  # per commit, a second run the same night (the old single re-run)
    changes: tuple[TrueChange, ...]
    bad_nights: tuple[int, ...]  # nights whose nightly run was a bad run
    model: RunModel
    draw_seed: int  # seeds the paired rounds drawn for this series
    load_phases: tuple[tuple[int, int], ...] = ()  # (first night, night after the last)
    runner_switch: int | None = None  # first night on the new runner


@dataclass(frozen=True, slots=True)
class DatasetShape:
    """How many series of each kind: per noise level, and for changes per noise level and size."""

    steps_per_cell: int = 14
    fixes_per_cell: int = 4
    flat_per_noise: int = 20
    drift_per_noise: int = 10
    bimodal_per_noise: int = 10
    load_per_noise: int = 15
    one_night_per_cell: int = 6
    runner_per_noise: int = 10
    min_length: int = 60
    max_length: int = 150

    def scaled(self, factor: int) -> DatasetShape:
        """The same shape with ``factor`` times the series of every kind."""
        return DatasetShape(
            steps_per_cell=self.steps_per_cell * factor,
            fixes_per_cell=self.fixes_per_cell * factor,
            flat_per_noise=self.flat_per_noise * factor,
            drift_per_noise=self.drift_per_noise * factor,
            bimodal_per_noise=self.bimodal_per_noise * factor,
            load_per_noise=self.load_per_noise * factor,
            one_night_per_cell=self.one_night_per_cell * factor,
            runner_per_noise=self.runner_per_noise * factor,
            min_length=self.min_length,
            max_length=self.max_length,
        )


def make_dataset(seed: int = 20240611, shape: DatasetShape | None = None) -> list[LabelledSeries]:
    """Every series of the benchmark, in a fixed order; the same seed gives the same numbers."""
    shape = shape or DatasetShape()
    plan = _plan(shape)
    root = np.random.SeedSequence(seed)
    return [
        _make_series(
            f"{kind}-{noise:g}-{size:g}-{number}", kind, noise, size, np.random.default_rng(child), shape
        )
        for number, ((kind, noise, size), child) in enumerate(zip(plan, root.spawn(len(plan)), strict=True))
    ]


def make_series(number: int, seed: int = 20240611, shape: DatasetShape | None = None) -> LabelledSeries:
    """Series ``number`` of :func:`make_dataset` alone (the same numbers, without drawing the rest)."""
    shape = shape or DatasetShape()
    plan = _plan(shape)
    kind, noise, size = plan[number]
    child = np.random.SeedSequence(seed).spawn(len(plan))[number]
    return _make_series(
        f"{kind}-{noise:g}-{size:g}-{number}", kind, noise, size, np.random.default_rng(child), shape
    )


def _plan(shape: DatasetShape) -> list[tuple[SeriesKind, float, float]]:
    """Kind, noise and change size of every series, in the dataset's order."""
    plan: list[tuple[SeriesKind, float, float]] = []
    for noise in NOISE_LEVELS_PCT:
        plan += [("flat", noise, 0.0)] * shape.flat_per_noise
        plan += [("drift", noise, 0.0)] * shape.drift_per_noise
        plan += [("bimodal", noise, 0.0)] * shape.bimodal_per_noise
        for size in CHANGE_SIZES_PCT:
            plan += [("step", noise, size)] * shape.steps_per_cell
        for size in FIX_SIZES_PCT:
            plan += [("regression_fix", noise, size)] * shape.fixes_per_cell
    for noise in NOISE_LEVELS_PCT:
        plan += [("load", noise, 0.0)] * shape.load_per_noise
        for size in FIX_SIZES_PCT:
            plan += [("one_night", noise, size)] * shape.one_night_per_cell
        plan += [("runner_change", noise, 0.0)] * shape.runner_per_noise
    return plan


@dataclass(slots=True)
class _Environment:
    drift: np.ndarray
    load: np.ndarray
    run_sigma: np.ndarray
    phases: list[tuple[int, int]]
    switch: int | None = None


def _make_series(
    name: str,
    kind: SeriesKind,
    noise_pct: float,
    size_pct: float,
    rng: np.random.Generator,
    shape: DatasetShape,
) -> LabelledSeries:
    # The order of the draws for the original kinds is kept, so their series stay as they were.
    length = int(rng.integers(shape.min_length, shape.max_length + 1))
    base_ms = math.exp(rng.uniform(math.log(30.0), math.log(300.0)))
    code = np.full(length, math.log(base_ms))
    env = _Environment(np.zeros(length), np.zeros(length), np.full(length, run_sigma_for(noise_pct)), [])
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
        env.drift += _drift(length, rng)
    elif kind == "one_night":
        index = int(rng.integers(_FIRST_CHANGE, last))
        changes += [TrueChange(index, size_pct, 1, True), TrueChange(index + 1, size_pct, -1, True)]
    elif kind == "load":
        _load_phases(env, rng)
        if rng.random() < 0.5:
            env.drift += _drift(length, rng)
    elif kind == "runner_change":
        env.switch = int(rng.integers(_FIRST_CHANGE, last + 1))
        level = rng.uniform(*_RUNNER_LEVEL) * (1 if rng.random() < 0.5 else -1)
        env.drift[env.switch :] += math.log1p(level)
        env.run_sigma[env.switch :] = run_sigma_for(noise_pct * rng.uniform(*_RUNNER_NOISE_FACTOR))
    for change in changes:
        code[change.index :] += change.log_shift
    mode_gap, far_share = 0.0, 0.0
    if kind == "bimodal":
        mode_gap, far_share = math.log1p(rng.uniform(0.02, 0.04)), rng.uniform(0.2, 0.5)
    bad_share = rng.uniform(*_BAD_RUN_SHARE)
    nightly, bad = _runs(code + env.drift, env, bad_share, mode_gap, far_share, rng)
    reruns, _ = _runs(code + env.drift, env, bad_share, mode_gap, far_share, rng)
    model = RunModel(
        code_level=tuple(float(value) for value in code),
        environment=tuple(float(value) for value in env.drift),
        load=tuple(float(value) for value in env.load),
        run_sigma=tuple(float(value) for value in env.run_sigma),
        bad_share=bad_share,
        mode_gap=mode_gap,
        far_share=far_share,
    )
    return LabelledSeries(
        name=name,
        kind=kind,
        noise_pct=noise_pct,
        values=tuple(nightly),
        reruns=tuple(reruns),
        changes=tuple(changes),
        bad_nights=tuple(int(index) for index in np.flatnonzero(bad)),
        model=model,
        draw_seed=int(rng.integers(2**62)),
        load_phases=tuple(env.phases),
        runner_switch=env.switch,
    )


def _drift(length: int, rng: np.random.Generator) -> np.ndarray:
    total = rng.uniform(0.02, 0.05) * (1 if rng.random() < 0.5 else -1)
    return np.linspace(0.0, math.log1p(total), length)


def _load_phases(env: _Environment, rng: np.random.Generator) -> None:
    """1–3 load phases, at least ``_LOAD_GAP`` quiet nights apart, after the first 12 nights."""
    length = env.load.size
    start = _FIRST_CHANGE
    for _ in range(int(rng.integers(_LOAD_PHASES[0], _LOAD_PHASES[1] + 1))):
        nights = int(rng.integers(_LOAD_NIGHTS[0], _LOAD_NIGHTS[1] + 1))
        latest = length - nights
        if latest < start:
            break
        first = int(rng.integers(start, min(latest, start + length // 2) + 1))
        env.load[first : first + nights] = math.log1p(rng.uniform(*_LOAD_SHIFT))
        env.phases.append((first, first + nights))
        start = first + nights + _LOAD_GAP


def _runs(
    level: np.ndarray,
    env: _Environment,
    bad_share: float,
    mode_gap: float,
    far_share: float,
    rng: np.random.Generator,
) -> tuple[list[float], np.ndarray]:
    """One run per commit on its own night, summarised by the median of its steps."""
    length = level.size
    steps = rng.integers(30, 51, size=length)
    run_shift = rng.normal(0.0, env.run_sigma, size=length)
    bad = rng.random(length) < bad_share
    run_shift[bad] += np.log1p(rng.uniform(*BAD_RUN_SHIFT, size=int(bad.sum())))
    if mode_gap:
        run_shift += mode_gap * (rng.random(length) < far_share)
    if env.load.any():
        strength = 1.0 + rng.normal(0.0, LOAD_ROUND_SPREAD, size=length)
        run_shift += env.load * strength + rng.normal(0.0, 1.0, size=length) * LOAD_RUN_JITTER * env.load
    medians = []
    for commit in range(length):
        count = int(steps[commit])
        times = np.exp(level[commit] + run_shift[commit] + rng.normal(0.0, STEP_JITTER, size=count))
        slow = rng.random(count) < SLOW_STEP_SHARE
        times[slow] *= 1.0 + SLOW_STEP_SCALE * (1.0 + rng.pareto(1.5, size=int(slow.sum())))
        times[0] *= rng.uniform(*COMPILE_FACTOR)
        medians.append(float(np.median(times)))
    return medians, bad
