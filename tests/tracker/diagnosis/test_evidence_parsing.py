"""Evidence parsers from recorded toy output: the graph-break records of ``TORCH_LOGS=graph_breaks``
(torch 2.13) and operator self time per step from real ``torch.profiler`` traces."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import DATA
from tracker.diagnosis import evidence_trace
from tracker.diagnosis.evidence import evidence_findings, summarize
from tracker.diagnosis.evidence_log import distinct_breaks, new_breaks
from tracker.diagnosis.evidence_trace import (
    Span,
    Trace,
    grown_operators,
    operator_times,
    read_trace,
    self_times_us,
)
from tracker.diagnosis.facts import FindingKind
from tracker.diagnosis.trace_stream import TraceError
from wire.torch_logs import GraphBreak, parse_graph_breaks

EVIDENCE = DATA / "evidence"
CULPRIT_LOG = (EVIDENCE / "toy_culprit_torch_logs.log").read_text()
GOOD_LOG = (EVIDENCE / "toy_good_torch_logs.log").read_text()
CULPRIT_TRACE = (EVIDENCE / "toy_culprit.trace.json.gz").read_bytes()
GOOD_TRACE = (EVIDENCE / "toy_good.trace.json.gz").read_bytes()
DISABLED = "Skip calling `torch.compiler.disable()`d function"


def test_the_culprits_log_has_three_records_of_one_disabled_call() -> None:
    breaks = parse_graph_breaks(CULPRIT_LOG.splitlines())
    assert len(breaks) == 3
    assert distinct_breaks(breaks) == [
        GraphBreak(
            site="toydit/norm.py:19",
            reason=DISABLED,
            explanation="Skip calling function `fused_layer_norm` since it was wrapped with "
            "`torch.compiler.disable` (reason: None)",
        )
    ]
    assert parse_graph_breaks(GOOD_LOG.splitlines()) == []
    assert new_breaks([], breaks) == distinct_breaks(breaks)
    assert new_breaks(breaks, breaks) == []


def test_older_torch_and_rank_prefixes_are_read_too() -> None:
    prefix = (
        "[rank0]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks] "
    )
    lines = [
        f"{prefix}Graph break: call_function UserDefinedObjectVariable(foo at 0x7f00aa) from user code at:",
        f'{prefix}  File "/venv/lib/python3.11/site-packages/sglang/layers/norm.py", line 102, in forward',
        "[12-02 02:32:24] unrelated line",
    ]
    assert parse_graph_breaks(lines) == [
        GraphBreak("sglang/layers/norm.py:102", "call_function UserDefinedObjectVariable(foo)")
    ]


def test_a_log_without_torchs_formatter_is_read_as_the_runner_reads_it() -> None:
    # The runner always counted these lines; the tracker once skipped every unprefixed one.
    lines = [
        "Graph break in user code at /tmp/ev_toy/bad/toydit/norm.py:19",
        f"Graph Break Reason: {DISABLED}",
        "  Explanation: Skip calling function `<function fused_layer_norm at 0x7fd4c42e00e0>`",
    ]
    assert parse_graph_breaks(lines) == [
        GraphBreak("toydit/norm.py:19", DISABLED, "Skip calling function `fused_layer_norm`")
    ]


def test_self_time_subtracts_direct_children_on_the_same_thread_only() -> None:
    spans = [
        Span("ProfilerStep#1", "user_annotation", (1, 1), 0.0, 100.0),
        Span("aten::linear", "cpu_op", (1, 1), 10.0, 50.0),
        Span("aten::addmm", "cpu_op", (1, 1), 15.0, 30.0),
        Span("aten::copy_", "cpu_op", (1, 1), 70.0, 10.0),
        Span("aten::other_thread", "cpu_op", (1, 2), 20.0, 40.0),
    ]
    trace = Trace.of(spans)
    assert self_times_us(trace).tolist() == [40.0, 20.0, 30.0, 10.0, 40.0]
    times = operator_times(trace)
    assert times.steps == 1
    assert times.per_step_ms == {
        "aten::linear": 0.02,
        "aten::addmm": 0.03,
        "aten::copy_": 0.01,
        "aten::other_thread": 0.04,
    }


def test_real_traces_give_the_graph_breaks_cost_per_step() -> None:
    good, culprit = operator_times(read_trace(GOOD_TRACE)), operator_times(read_trace(CULPRIT_TRACE))
    assert good.steps == culprit.steps == 3  # --num-profiled-timesteps 3
    assert "aten::native_layer_norm" not in good.per_step_ms  # inside the compiled graph
    assert culprit.per_step_ms["aten::native_layer_norm"] > 0  # eager, between the graphs
    grown = grown_operators([good.per_step_ms], [culprit.per_step_ms])
    names = [item.name for item in grown]
    assert "aten::native_layer_norm" in names
    assert "Torch-Compiled Region" in names  # one region per block now, not one per step
    assert grown == sorted(grown, key=lambda item: -item.change_ms)
    # A trace also reads ungzipped, and the totals are the trace's own.
    plain = gzip.decompress(CULPRIT_TRACE)
    assert operator_times(read_trace(plain)) == culprit
    assert json.loads(plain)["traceEvents"]


def test_a_faster_culprit_is_explained_by_the_operators_that_shrank() -> None:
    before = {"aten::addmm": 0.50, "aten::native_layer_norm": 0.06, "aten::copy_": 0.02}
    after = {"aten::addmm": 0.30, "aten::copy_": 0.021}
    fell = grown_operators([before], [after], falling=True)
    assert [(item.name, round(item.change_ms, 3)) for item in fell] == [
        ("aten::addmm", -0.2),
        ("aten::native_layer_norm", -0.06),
    ]
    assert grown_operators([before], [after]) == []  # nothing grew by 10 % and 0.01 ms
    summary = {"graph_breaks": [], "operators_ms_per_step": before, "steps": 3}
    faster = {"graph_breaks": [], "operators_ms_per_step": after, "steps": 3}
    lines = [finding.summary for finding in evidence_findings([summary], [faster])]
    assert lines == [
        "aten::addmm self time -0.20 ms/step (-40.0 %)",
        "aten::native_layer_norm self time -0.060 ms/step (gone)",
    ]


def test_operators_are_named_only_when_the_profiles_agree_with_the_measured_change() -> None:
    before = {"aten::addmm": 0.50, "aten::copy_": 0.02}
    after = {"aten::addmm": 0.30, "aten::copy_": 0.021}  # the profiles: 38 % faster
    summary = {"graph_breaks": [], "operators_ms_per_step": before, "steps": 3}
    faster = {"graph_breaks": [], "operators_ms_per_step": after, "steps": 3}
    named = evidence_findings([summary], [faster], measured_pct=-30.0)
    assert [finding.kind for finding in named] == [FindingKind.OPERATOR]
    # A slower culprit whose two profiles happened to read faster: no operator is named.
    assert evidence_findings([summary], [faster], measured_pct=+9.1) == []
    # A profile change far short of the measured one says too little as well.
    assert evidence_findings([summary], [faster], measured_pct=-90.0) == []


def test_findings_name_the_new_break_first_then_the_operators() -> None:
    findings = evidence_findings([summarize(GOOD_LOG, GOOD_TRACE)], [summarize(CULPRIT_LOG, CULPRIT_TRACE)])
    assert [finding.kind for finding in findings][:1] == [FindingKind.GRAPH_BREAK]
    assert findings[0].summary.startswith(f"new graph break at toydit/norm.py:19: {DISABLED}")
    assert "fused_layer_norm" in findings[0].summary
    operators = [finding for finding in findings if finding.kind is FindingKind.OPERATOR]
    assert 1 <= len(operators) <= 3
    assert any(
        "aten::native_layer_norm self time +" in item.summary and "(new)" in item.summary
        for item in operators
    )
    assert all(item.weight < findings[0].weight for item in operators)
    # Nothing is said without both sides, or when the sides are alike.
    assert evidence_findings([], [summarize(CULPRIT_LOG, CULPRIT_TRACE)]) == []
    same = summarize(GOOD_LOG, GOOD_TRACE)
    assert evidence_findings([same], [same]) == []


def test_a_run_without_a_readable_trace_still_gives_its_breaks() -> None:
    summary = summarize(CULPRIT_LOG, b"not a trace")
    assert summary["trace_error"]
    assert summary["operators_ms_per_step"] is None
    assert summarize(CULPRIT_LOG, None)["graph_breaks"][0]["site"] == "toydit/norm.py:19"
    [finding] = evidence_findings([summarize(GOOD_LOG, None)], [summary])
    assert finding.kind is FindingKind.GRAPH_BREAK


def test_a_truncated_or_oversized_gzip_is_refused_before_it_is_unpacked_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(TraceError, match="truncated"):
        read_trace(GOOD_TRACE[: len(GOOD_TRACE) // 2])
    with pytest.raises(TraceError, match="not a gzip file"):
        read_trace(GOOD_TRACE[:20] + b"\x00" * 64 + GOOD_TRACE[84:])
    # A small gzip that unpacks to more than the limit (a bomb) stops at the limit.
    monkeypatch.setattr(evidence_trace, "MAX_TRACE_BYTES", 1024 * 1024)
    bomb = gzip.compress(b"[" + b" " * (4 * 1024 * 1024) + b"]")
    assert len(bomb) < 8 * 1024
    with pytest.raises(TraceError, match="over 1 MiB unpacked"):
        read_trace(bomb)
    assert read_trace(GOOD_TRACE)  # the real one, well under the limit, still reads


def test_the_event_budget_keeps_at_most_its_events_and_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = read_trace(CULPRIT_TRACE)
    assert whole.dropped == 0
    kept = read_trace(CULPRIT_TRACE, max_events=500)
    assert len(kept) == 500
    assert kept.dropped == len(whole) - 500
    assert kept.starts_us.tolist() == whole.starts_us[:500].tolist()  # the first ones, in order
    assert operator_times(kept).dropped == kept.dropped
    # The summary says the trace was read truncated; a whole one says nothing was left out.
    assert summarize(CULPRIT_LOG, CULPRIT_TRACE)["trace_events_dropped"] == 0
    monkeypatch.setattr(evidence_trace, "MAX_TRACE_EVENTS", 500)
    summary = summarize(CULPRIT_LOG, CULPRIT_TRACE)
    assert summary["trace_events_dropped"] == len(whole) - 500
    assert summary["trace_error"] is None
    assert summary["operators_ms_per_step"]


def test_threads_and_names_past_their_budgets_are_counted_as_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence_trace, "MAX_THREADS", 2)
    monkeypatch.setattr(evidence_trace, "MAX_OPERATOR_NAMES", 2)
    spans = [Span(f"op{index % 3}", "cpu_op", (1, index % 4), 10.0 * index, 5.0) for index in range(12)]
    trace = Trace.of(spans)
    # Threads 0 and 1 are kept (6 events); of their names op0 and op1 are named, op2 is not.
    assert len(trace) == 6
    assert trace.names == ("op0", "op1")
    assert trace.dropped == 6 + 2
    assert set(operator_times(trace).per_step_ms) == {"op0", "op1"}
