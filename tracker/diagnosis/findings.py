"""The diagnosis of a change: every rule over the runs before and after, most telling first (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from tracker.diagnosis.facts import DEFAULT_CONFIG, DiagnosisConfig, Finding, RunFacts
from tracker.diagnosis.mechanics import compile_finding, gpu_state_finding, memory_finding
from tracker.diagnosis.timing import stage_finding, warmup_finding


def diagnose(
    before: Sequence[RunFacts], after: Sequence[RunFacts], config: DiagnosisConfig = DEFAULT_CONFIG
) -> list[Finding]:
    """Why ``after`` differs from ``before``: the findings, most telling first.

    Parameters
    ----------
    before, after
        The runs of the last good commit (or a comparison's base arm) and of the first bad
        commit (or the head arm); failed and flagged runs may be among them.
    config
        How far each quantity must move to be named.

    Returns
    -------
    list of Finding
        Compile counters, the machine, steps, stages, memory, ordered by weight; empty when
        nothing the runs recorded differs beyond noise, or a side has no successful run.
    """
    if not any(run.ok for run in before) or not any(run.ok for run in after):
        return []
    found = [
        compile_finding(before, after),
        gpu_state_finding(before, after, config),
        warmup_finding(before, after, config),
        stage_finding(before, after, config),
        memory_finding(before, after, config),
    ]
    return sorted((finding for finding in found if finding is not None), key=lambda item: -item.weight)
