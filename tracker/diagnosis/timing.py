"""Where the time went: step 0 against the steady state (``warmup``), and which stage moved (``stage``).

Pure rules over :class:`~tracker.diagnosis.facts.RunFacts`; each returns one finding or ``None``
when nothing moved beyond noise, or when the runs did not record what it needs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import NamedTuple

from tracker.diagnosis.facts import (
    DiagnosisConfig,
    Finding,
    FindingKind,
    RunFacts,
    counted,
    format_ms,
    format_pct,
)
from tracker.statistics.shifts import Shift, median_shift

WARMUP_WEIGHT = 2.2
STAGE_WEIGHT = 2.0


def _shift_detail(shift: Shift | None) -> dict[str, float | bool | None] | None:
    if shift is None:
        return None
    return {
        "before": shift.before,
        "after": shift.after,
        "change_pct": shift.change_pct,
        "noise_pct": shift.noise_pct,
        "moved": shift.beyond_noise,
    }


def _values(runs: Sequence[RunFacts], attribute: str) -> list[float]:
    return [value for run in runs if (value := getattr(run, attribute)) is not None]


def warmup_finding(
    before: Sequence[RunFacts], after: Sequence[RunFacts], config: DiagnosisConfig
) -> Finding | None:
    """Step 0 and the steady state (median of steps 1..n-1), before and after.

    Only step 0 moved: a compile, JIT or warm-up cost. Only the steady state moved: a cost paid
    on every step. Runs without per-step times (a log's average only) say nothing here.
    """
    left, right = counted(list(before)), counted(list(after))
    first = median_shift(
        _values(left, "first_step_ms"),
        _values(right, "first_step_ms"),
        min_pct=config.first_step_min_pct,
        min_abs=config.first_step_min_ms,
        z=config.z,
    )
    steady = median_shift(
        _values(left, "steady_step_ms"),
        _values(right, "steady_step_ms"),
        min_pct=config.steady_min_pct,
        z=config.z,
    )
    first_moved = first is not None and first.beyond_noise
    steady_moved = steady is not None and steady.beyond_noise
    if not first_moved and not steady_moved:
        return None
    summary = _warmup_summary(first, steady, config)
    moved = steady if steady_moved else first
    assert moved is not None
    return Finding(
        kind=FindingKind.WARMUP,
        summary=summary,
        detail={"step0_ms": _shift_detail(first), "steady_ms": _shift_detail(steady)},
        weight=WARMUP_WEIGHT + min(abs(moved.change_pct), 100.0) / 1000.0,
    )


def _moved(label: str, shift: Shift) -> str:
    return f"{label} {format_pct(shift.change_pct)} ({format_ms(shift.before)} → {format_ms(shift.after)})"


def _warmup_summary(first: Shift | None, steady: Shift | None, config: DiagnosisConfig) -> str:
    """Which of step 0 and the steady state moved, in words ("unchanged" only below the minimum)."""
    first_moved = first is not None and first.beyond_noise
    if steady is not None and steady.beyond_noise:
        said = _moved("steady-state step", steady)
        if first is None:
            return f"{said}: a cost paid on every step"
        if (
            first_moved
            and first.change_pct * steady.change_pct > 0
            and abs(first.delta) > 2 * abs(steady.delta)
        ):
            return f"{said} and {_moved('step 0', first)}: a cost on every step, and more in step 0"
        small = abs(first.change_pct) < min(config.first_step_min_pct, abs(steady.change_pct) / 2)
        if not first_moved and small:
            return f"{said}, step 0 unchanged: a cost paid on every step"
        return f"{said}, step 0 {format_pct(first.change_pct)}: a cost paid on every step"
    assert first is not None
    if steady is None:
        return f"{_moved('step 0', first)}: the first step, where compilation and warm-up land"
    rest = (
        "steady state unchanged"
        if abs(steady.change_pct) < config.steady_min_pct
        else f"steady state {format_pct(steady.change_pct)}, within noise"
    )
    return f"only {_moved('step 0', first)}, {rest}: a compile, JIT or warm-up cost"


def stage_finding(
    before: Sequence[RunFacts], after: Sequence[RunFacts], config: DiagnosisConfig
) -> Finding | None:
    """Stage by stage (as sglang names them), the median time before and after: which moved.

    A stage moved when its change stands out of the noise, is at least ``stage_min_pct`` and
    ``stage_min_ms``, and at least ``stage_min_share_pct`` of all stages' time; a stage that
    only one side ran counts when it takes that much. The others are said to be unchanged.
    """
    left = [run.stage_times() for run in counted(list(before)) if run.stages]
    right = [run.stage_times() for run in counted(list(after)) if run.stages]
    if not left or not right:
        return None
    names = list(dict.fromkeys(name for times in (*left, *right) for name in times))
    medians_before = {name: _median_of(left, name) for name in names}
    total = sum(value for value in medians_before.values() if value is not None)
    floor = max(config.stage_min_ms, total * config.stage_min_share_pct / 100.0)
    moved: list[tuple[str, Shift]] = []
    lone: list[_LoneStage] = []
    unchanged: list[str] = []
    for name in names:
        in_before = [times[name] for times in left if name in times]
        in_after = [times[name] for times in right if name in times]
        if not in_before or not in_after:
            alone = statistics.median(in_before or in_after)
            if alone >= floor:
                lone.append(_LoneStage(name=name, ms=alone, after=bool(in_after)))
            continue
        shift = median_shift(in_before, in_after, min_pct=config.stage_min_pct, min_abs=floor, z=config.z)
        if shift is not None and shift.beyond_noise:
            moved.append((name, shift))
        else:
            unchanged.append(name)
    if not moved and not lone:
        return None
    return _stage_result(moved, lone, unchanged)


class _LoneStage(NamedTuple):
    """A stage only one side ran: its name, median time, and whether it is the side after."""

    name: str
    ms: float
    after: bool


def _stage_result(moved: list[tuple[str, Shift]], lone: list[_LoneStage], unchanged: list[str]) -> Finding:
    moved.sort(key=lambda item: abs(item[1].delta), reverse=True)
    parts = [_moved(name, shift) for name, shift in moved]
    parts += [
        f"new {stage.name} ({format_ms(stage.ms)})"
        if stage.after
        else f"{stage.name} gone (was {format_ms(stage.ms)})"
        for stage in lone
    ]
    if unchanged:
        others = "the other stage" if len(unchanged) == 1 else f"the other {len(unchanged)} stages"
        parts.append(f"{others} unchanged")
    largest = max((abs(shift.change_pct) for _, shift in moved), default=100.0)
    return Finding(
        kind=FindingKind.STAGE,
        summary="; ".join(parts),
        detail={
            "moved": {name: _shift_detail(shift) for name, shift in moved},
            "only_after": {stage.name: stage.ms for stage in lone if stage.after},
            "only_before": {stage.name: stage.ms for stage in lone if not stage.after},
            "unchanged": unchanged,
        },
        weight=STAGE_WEIGHT + min(largest, 100.0) / 1000.0,
    )


def _median_of(groups: list[dict[str, float]], name: str) -> float | None:
    values = [times[name] for times in groups if name in times]
    return statistics.median(values) if values else None
