"""The one reader of torch.compile's log records: events a runner counts, graph breaks the tracker names.

The records are torch's own (TorchLogsFormatter, as ``tests/fakes/fake_sglang.py`` and the
recorded toy logs in ``tests/data/evidence`` print them), plus the shapes either earlier reader
missed: lines without torch's formatter, CRLF endings, a record without a compile id, ranks
interleaved line by line.
"""

from __future__ import annotations

from tests.conftest import DATA
from tests.fakes import fake_sglang
from wire.torch_logs import (
    CompileEvent,
    CompileEventKind,
    GraphBreak,
    compile_event,
    parse_graph_breaks,
    short_site,
    split_line,
)

PREFIX = "[rank1]:V0515 21:32:02.058000 49093 torch/_dynamo/symbolic_convert.py:556] [0/0] [__graph_breaks]"
DISABLED = "Skip calling `torch.compiler.disable()`d function"


def fake_log_lines(rank: int = 0) -> list[str]:
    return [line for record in fake_sglang.compile_events(rank, 100 + rank) for line in record.split("\n")]


def test_a_line_is_split_after_torchs_prefix() -> None:
    line = split_line(f"{PREFIX} Graph Break Reason: x\n")
    assert (line.prefix, line.compile_id, line.message) == (PREFIX, "0/0", "Graph Break Reason: x")
    # Without a compile id the artifact is not mistaken for one.
    bare = split_line(
        "V0515 21:32:02.058000 1 torch/_dynamo/convert_frame.py:9] [__graph_breaks] Graph break"
    )
    assert (bare.compile_id, bare.message) == ("", "Graph break")
    assert split_line("progress 10%\rtext") == split_line("text")
    assert split_line("plain output\r\n").message == "plain output"


def test_each_kind_of_event_is_read_from_its_first_line_only() -> None:
    events = [event for line in fake_log_lines() if (event := compile_event(line)) is not None]
    norm = "/sgl/python/sglang/multimodal_gen/runtime/layers/layernorm.py:87"
    assert [(event.kind, event.compile_id, event.subject) for event in events] == [
        (CompileEventKind.GRAPH_BREAK, "0/0", norm),
        (
            CompileEventKind.GRAPH_BREAK,
            "1/0",
            "/sgl/python/sglang/multimodal_gen/runtime/layers/attention/selector.py:141",
        ),
        (CompileEventKind.GRAPH_BREAK, "2/0", norm),  # the suppressed duplicate
        (
            CompileEventKind.RECOMPILE,
            "0/1",
            "forward /sgl/python/sglang/multimodal_gen/runtime/models/dits/qwen_image.py:380",
        ),
        (CompileEventKind.RECOMPILE_LIMIT, "3/8", "8"),
    ]
    assert compile_event(f"{PREFIX} Graph Break Reason: {DISABLED}") is None
    old = compile_event(f"{PREFIX} Graph break: call_function foo from user code at:")
    assert old == CompileEvent(
        CompileEventKind.GRAPH_BREAK, "0/0", "", "Graph break: call_function foo from user code at:"
    )


def test_the_same_records_give_the_runners_events_and_the_trackers_breaks() -> None:
    breaks = parse_graph_breaks(fake_log_lines())
    assert breaks == [
        GraphBreak(
            "layers/layernorm.py:87",
            DISABLED,
            "Skip calling function `fused_rms_norm` since it was wrapped with `torch.compiler.disable` "
            "(reason: None)",
        ),
        GraphBreak(
            "attention/selector.py:141", "Unsupported Tensor.item() call with capture_scalar_outputs=False"
        ),
        GraphBreak("layers/layernorm.py:87", DISABLED),
    ]


def test_a_log_without_torchs_formatter_is_read_too() -> None:
    # The runner's counter read these; the tracker's parser once skipped every unprefixed line.
    lines = [
        "Graph break in user code at /src/toydit/norm.py:19",
        f"Graph Break Reason: {DISABLED}",
        "  Explanation: Skip calling function `<function fused_layer_norm at 0x7fd4c42e00e0>`",
        "[12-02 02:32:24] an unrelated line",
    ]
    assert compile_event(lines[0]) is not None
    assert parse_graph_breaks(lines) == [
        GraphBreak("toydit/norm.py:19", DISABLED, "Skip calling function `fused_layer_norm`")
    ]


def test_crlf_line_endings_lose_no_event() -> None:
    # A child on a pseudo-terminal ends its lines with "\r\n"; split on "\n", each keeps its "\r".
    line = f"{PREFIX} Graph break in user code at /src/model.py:102\r"
    event = compile_event(line)
    assert event is not None
    assert event.subject == "/src/model.py:102"
    assert parse_graph_breaks([line, f"{PREFIX} Graph Break Reason: {DISABLED}\r"]) == [
        GraphBreak("src/model.py:102", DISABLED)
    ]


def test_records_of_two_ranks_interleaved_line_by_line_keep_their_own_reasons() -> None:
    rank0 = PREFIX.replace("[rank1]", "[rank0]").replace("49093", "49092")
    lines = [
        f"{rank0} Graph break in user code at /src/a.py:1",
        f"{PREFIX} Graph break in user code at /src/b.py:2",
        f"{rank0} Graph Break Reason: reason a",
        f"{PREFIX} Graph Break Reason: reason b",
    ]
    assert parse_graph_breaks(lines) == [
        GraphBreak("src/a.py:1", "reason a"),
        GraphBreak("src/b.py:2", "reason b"),
    ]


def test_an_old_style_break_is_named_once_its_frame_line_comes() -> None:
    head = (
        f"{PREFIX} Graph break: call_function UserDefinedObjectVariable(foo at 0x7f00aa) from user code at:"
    )
    frame = (
        f'{PREFIX}   File "/venv/lib/python3.11/site-packages/sglang/layers/norm.py", line 102, in forward'
    )
    named = GraphBreak("sglang/layers/norm.py:102", "call_function UserDefinedObjectVariable(foo)")
    assert parse_graph_breaks([head, frame]) == [named]
    # A capped log that cut the frame line off: the break is counted (an event) but has no site to name.
    assert compile_event(head) is not None
    assert parse_graph_breaks([head, "[perftrack: 5000 bytes of log omitted]"]) == []


def test_sites_are_shortened_to_their_package_path() -> None:
    assert short_site("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1821") == (
        "torch/nn/modules/module.py:1821"
    )
    assert short_site("/tmp/ev_toy/bad/toydit/norm.py:19") == "toydit/norm.py:19"
    assert short_site("<unknown>") == "<unknown>"


def test_the_recorded_toy_logs() -> None:
    culprit = (DATA / "evidence" / "toy_culprit_torch_logs.log").read_text().splitlines()
    assert [item.site for item in parse_graph_breaks(culprit)] == ["toydit/norm.py:19"] * 3
    events = [event for line in culprit if (event := compile_event(line)) is not None]
    assert {event.kind for event in events} == {CompileEventKind.GRAPH_BREAK}
    assert len(events) == 3
