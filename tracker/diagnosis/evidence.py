"""What an evidence run showed, and what a diagnosis says of it (pure).

An evidence run is read once, after it is stored, into a small summary (:func:`summarize`): its
distinct graph breaks (from the ``TORCH_LOGS=graph_breaks`` records in its log) and each
operator's self time per profiled step (from its trace). :func:`evidence_findings` compares the
summaries of the two sides: the graph breaks that are new on the culprit's side
(``graph_break``, right after the compile counters: a new break is the most telling fact there
is) and the operators whose self time grew most (``operator``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracker.diagnosis.evidence_log import distinct_breaks, new_breaks
from tracker.diagnosis.evidence_trace import (
    OperatorGrowth,
    grown_operators,
    operator_times,
    read_trace,
    total_ms,
)
from tracker.diagnosis.facts import Finding, FindingKind, format_pct
from tracker.diagnosis.trace_stream import TraceError
from wire.torch_logs import GraphBreak, parse_graph_breaks

GRAPH_BREAK_WEIGHT = 3.05  # after the compile counters' finding (3.1 and up), before the machine's
OPERATOR_WEIGHT = 2.3  # after the machine's warning, before step 0 and the stages
MAX_BREAK_FINDINGS = 3
MAX_OPERATORS = 3
# The profiles' total self time must move the measured way by at least this share of the measured
# change before their operators are named.
PROFILE_AGREEMENT = 0.5
MAX_OPERATORS_STORED = 200  # the summary keeps the largest operators of a trace


def summarize(raw_log: str, trace: bytes | None) -> dict[str, Any]:
    """The summary of one evidence run: its distinct graph breaks and, when its trace is readable,
    the self time per step of its largest operators (``trace_error`` says why not;
    ``trace_events_dropped``, when non-zero, how many events past the reader's budget it left out)."""
    breaks = distinct_breaks(parse_graph_breaks(raw_log.splitlines()))
    summary: dict[str, Any] = {
        "graph_breaks": [
            {"site": item.site, "reason": item.reason, "explanation": item.explanation} for item in breaks
        ],
        "operators_ms_per_step": None,
        "profiled_steps": None,
        "trace_error": None if trace is not None else "the run uploaded no trace",
        "trace_events_dropped": 0,
    }
    if trace is not None:
        try:
            times = operator_times(read_trace(trace))
        except TraceError as error:
            summary["trace_error"] = str(error)
        else:
            largest = sorted(times.per_step_ms.items(), key=lambda item: -item[1])[:MAX_OPERATORS_STORED]
            summary["operators_ms_per_step"] = {name: round(value, 6) for name, value in largest}
            summary["profiled_steps"] = times.steps
            summary["trace_events_dropped"] = times.dropped
    return summary


def _breaks(summary: Mapping[str, Any]) -> list[GraphBreak]:
    found = []
    for item in summary.get("graph_breaks") or []:
        if isinstance(item, Mapping):
            found.append(
                GraphBreak(
                    str(item.get("site", "")), str(item.get("reason", "")), str(item.get("explanation", ""))
                )
            )
    return found


def _operators(summary: Mapping[str, Any]) -> dict[str, float] | None:
    times = summary.get("operators_ms_per_step")
    if not isinstance(times, Mapping):
        return None
    return {str(name): float(value) for name, value in times.items() if isinstance(value, int | float)}


def evidence_findings(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    *,
    measured_pct: float | None = None,
) -> list[Finding]:
    """What the evidence runs' summaries of the two sides say, most telling first.

    Parameters
    ----------
    before, after
        Summaries (:func:`summarize`) of the last good (or base) and the culprit (or head) side.
    measured_pct
        The change the measurements found (the alert's or the result's, %). The operators are
        named only when the profiles' own total moved the same way by at least
        :data:`PROFILE_AGREEMENT` of it: one profiled run a side is noisy, and an operator list
        that contradicts the measured change would mislead.

    Returns
    -------
    list of Finding
        The new graph breaks (at most :data:`MAX_BREAK_FINDINGS`, the last one counting the rest),
        then the operators whose self time per step grew most (fell most, when the culprit's
        operators take less time in all); empty when a side has no summary.
    """
    if not before or not after:
        return []
    found = _break_findings(
        [item for summary in before for item in _breaks(summary)],
        [item for summary in after for item in _breaks(summary)],
    )
    before_times = [times for summary in before if (times := _operators(summary)) is not None]
    after_times = [times for summary in after if (times := _operators(summary)) is not None]
    # A slower culprit is explained by what grew, a faster one by what shrank.
    total_before, total_after = total_ms(before_times), total_ms(after_times)
    if total_before is None or total_after is None or total_before <= 0:
        return found
    profiled_pct = 100.0 * (total_after - total_before) / total_before
    if measured_pct is not None and not _agrees(profiled_pct, measured_pct):
        return found
    falling = profiled_pct < 0
    moved = grown_operators(before_times, after_times, limit=MAX_OPERATORS, falling=falling)
    for rank, growth in enumerate(moved):
        found.append(_operator_finding(growth, rank))
    return found


def _agrees(profiled_pct: float, measured_pct: float) -> bool:
    """The profiles moved the way the measurements did, by at least a share of it."""
    same_way = (profiled_pct > 0) == (measured_pct > 0)
    return same_way and abs(profiled_pct) >= PROFILE_AGREEMENT * abs(measured_pct)


def _break_findings(before: list[GraphBreak], after: list[GraphBreak]) -> list[Finding]:
    new = new_breaks(before, after)
    findings = []
    for rank, item in enumerate(new[:MAX_BREAK_FINDINGS]):
        more = len(new) - MAX_BREAK_FINDINGS if rank == MAX_BREAK_FINDINGS - 1 else 0
        explained = f" ({item.explanation})" if item.explanation and item.explanation != item.reason else ""
        extra = f"; and {more} more new graph break{'s' if more > 1 else ''}" if more > 0 else ""
        findings.append(
            Finding(
                kind=FindingKind.GRAPH_BREAK,
                summary=f"new graph break at {item.site}: {item.reason}{explained}{extra}",
                detail={
                    "site": item.site,
                    "reason": item.reason,
                    "explanation": item.explanation,
                    "new": len(new),
                },
                weight=GRAPH_BREAK_WEIGHT - 0.001 * rank,
            )
        )
    return findings


def _ms(value: float) -> str:
    return f"{value:+.2f}" if abs(value) >= 0.1 else f"{value:+.3f}"


def _operator_finding(growth: OperatorGrowth, rank: int) -> Finding:
    pct = growth.change_pct
    relative = "new" if pct is None else ("gone" if growth.after_ms <= 0 else format_pct(pct))
    return Finding(
        kind=FindingKind.OPERATOR,
        summary=f"{growth.name} self time {_ms(growth.change_ms)} ms/step ({relative})",
        detail={
            "operator": growth.name,
            "before_ms_per_step": round(growth.before_ms, 4),
            "after_ms_per_step": round(growth.after_ms, 4),
            "change_pct": None if pct is None else round(pct, 1),
        },
        weight=OPERATOR_WEIGHT - 0.01 * rank,
    )
