"""What changed underneath the time: compile counters (``compile``), peak memory (``memory``) and
the machine (``gpu_state``). Pure rules over :class:`~tracker.diagnosis.facts.RunFacts`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from tracker.diagnosis.facts import (
    Counters,
    DiagnosisConfig,
    Finding,
    FindingKind,
    RunFacts,
    counted,
    format_mib,
    format_pct,
)
from tracker.statistics.shifts import median_shift

COMPILE_WEIGHT = 3.0
GPU_STATE_WEIGHT = 2.5
MEMORY_WEIGHT = 1.0
MACHINE_NOT_CODE = "the change may be the machine, not the code"


def _count(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _counter_phrase(name: str, before: float, after: float) -> str:
    up = after > before
    change = f"{_count(before)} → {_count(after)}"
    if name == "graph_breaks":
        return f"graph breaks {'rose' if up else 'fell'} {change} per run"
    if name == "frames_compiled":
        return f"compiled frames {'rose' if up else 'dropped'} {change}"
    if name == "unique_graphs":
        return f"unique graphs {change}"
    return f"recompiles {change}"


def compile_finding(before: Sequence[RunFacts], after: Sequence[RunFacts]) -> Finding | None:
    """Each torch.compile counter's median per run before and after, named where it differs.

    Counters are facts about the code, not the machine: runs flagged for their measuring
    conditions count here too. A counter only one side reported says nothing.
    """
    phrases: list[str] = []
    detail: dict[str, object] = {}
    for name in Counters._fields:
        left = [value for run in before if run.ok and (value := getattr(run.counters, name)) is not None]
        right = [value for run in after if run.ok and (value := getattr(run.counters, name)) is not None]
        if not left or not right:
            continue
        low, high = float(statistics.median(left)), float(statistics.median(right))
        if low == high:
            continue
        phrases.append(_counter_phrase(name, low, high))
        detail[name] = {"before": low, "after": high, "runs_before": left, "runs_after": right}
    if not phrases:
        return None
    return Finding(
        kind=FindingKind.COMPILE,
        summary="; ".join(phrases),
        detail=detail,
        weight=COMPILE_WEIGHT + 0.1 * len(phrases),
    )


def memory_finding(
    before: Sequence[RunFacts], after: Sequence[RunFacts], config: DiagnosisConfig
) -> Finding | None:
    """Peak memory's median before and after, when it moved by a few percent and some MiB."""
    shift = median_shift(
        [run.peak_memory_mb for run in counted(list(before)) if run.peak_memory_mb is not None],
        [run.peak_memory_mb for run in counted(list(after)) if run.peak_memory_mb is not None],
        min_pct=config.memory_min_pct,
        min_abs=config.memory_min_mb,
        z=config.z,
    )
    if shift is None or not shift.beyond_noise:
        return None
    return Finding(
        kind=FindingKind.MEMORY,
        summary=f"peak memory {format_mib(shift.delta, signed=True)} ({format_pct(shift.change_pct)}): "
        f"{format_mib(shift.before)} → {format_mib(shift.after)}",
        detail={
            "before_mb": shift.before,
            "after_mb": shift.after,
            "change_pct": shift.change_pct,
            "noise_pct": shift.noise_pct,
        },
        weight=MEMORY_WEIGHT + min(abs(shift.change_pct), 100.0) / 100.0,
    )


def gpu_state_finding(
    before: Sequence[RunFacts], after: Sequence[RunFacts], config: DiagnosisConfig
) -> Finding | None:
    """Whether the machine differs between the groups: runs flagged for their conditions, SM
    clocks, GPU model or driver, or wholly different runners. A warning, not a cause."""
    parts: list[str] = []
    detail: dict[str, object] = {}
    for side, runs in (("before", before), ("after", after)):
        flagged = [run for run in runs if run.ok and run.flag is not None]
        if flagged:
            total = sum(1 for run in runs if run.ok)
            reason = flagged[0].excluded_reason or flagged[0].flag
            verb = "was" if len(flagged) == 1 else "were"
            parts.append(f"{len(flagged)} of {total} runs {side} {verb} flagged ({reason}) and left out")
            detail[f"flagged_{side}"] = [run.run_id for run in flagged]
    left, right = counted(list(before)), counted(list(after))
    for key, label in (("sm_clock_mhz", "SM clock"), ("max_sm_clock_mhz", "max SM clock")):
        shift = median_shift(
            _readings(left, key), _readings(right, key), min_pct=config.clock_min_pct, z=config.z
        )
        if shift is not None and shift.beyond_noise:
            parts.append(
                f"{label} {shift.before:.0f} → {shift.after:.0f} MHz ({format_pct(shift.change_pct)})"
            )
            detail[key] = {"before": shift.before, "after": shift.after}
    for key, label, read in (
        ("gpu", "GPU", lambda run: run.gpu.model),
        ("driver", "driver", lambda run: run.gpu.driver),
        ("runner", "runner", lambda run: run.runner),
    ):
        changed = _disjoint(left, right, read)
        if changed is not None:
            parts.append(f"{label} {', '.join(changed[0])} → {', '.join(changed[1])}")
            detail[key] = {"before": changed[0], "after": changed[1]}
    if not parts:
        return None
    return Finding(
        kind=FindingKind.GPU_STATE,
        summary=f"{'; '.join(parts)}: {MACHINE_NOT_CODE}",
        detail=detail,
        weight=GPU_STATE_WEIGHT,
    )


def _readings(runs: Sequence[RunFacts], key: str) -> list[float]:
    return [value for run in runs if (value := getattr(run.gpu, key)) is not None]


def _disjoint(
    left: Sequence[RunFacts], right: Sequence[RunFacts], read: Callable[[RunFacts], str | None]
) -> tuple[list[str], list[str]] | None:
    """The values each side saw, when both saw some and none in common."""
    before = sorted({value for run in left if (value := read(run))})
    after = sorted({value for run in right if (value := read(run))})
    if not before or not after or set(before) & set(after):
        return None
    return before, after
