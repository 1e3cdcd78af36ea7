"""The /perf command parser: grammar, globs, hardware and PR checks, helpful errors."""

from __future__ import annotations

import pytest

from tracker.github.commands import (
    CommandError,
    PerfCommand,
    check_hardware,
    expand_cases,
    find_command,
    parse_command,
)

SLUGS = ["qwen-image-t2i-1024", "qwen-image-2.1-serve-gb300", "wan2.2-t2v-a14b", "wan2.1-t2v-1.3b"]


def test_bare_perf_runs_the_defaults() -> None:
    assert parse_command("/perf") == PerfCommand(action="run", text="/perf")


def test_full_command() -> None:
    command = parse_command(
        "/perf qwen-image-t2i-1024 wan2.2-t2v-a14b on H200,GB300 rounds 4 with #43601 #43602"
    )
    assert command.action == "run"
    assert command.cases == ("qwen-image-t2i-1024", "wan2.2-t2v-a14b")
    assert command.hardware == ("H200", "GB300")
    assert command.rounds == 4
    assert command.stacked == (43601, 43602)


def test_clauses_in_any_order_and_spacing() -> None:
    command = parse_command("/perf  wan* with 43601, #43602 on H200 , GB300 rounds 8")
    assert command.cases == ("wan*",)
    assert command.hardware == ("H200", "GB300")
    assert command.stacked == (43601, 43602)
    assert command.rounds == 8
    assert command.text == "/perf wan* with 43601, #43602 on H200 , GB300 rounds 8"


@pytest.mark.parametrize("word", ["help", "HELP", "cancel"])
def test_help_and_cancel(word: str) -> None:
    assert parse_command(f"/perf {word}").action == word.lower()


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("/perf rounds four", "whole number"),
        ("/perf rounds 0", "from 1 to 64"),
        ("/perf rounds 65", "from 1 to 64"),
        ("/perf rounds 2 3", "one number"),
        ("/perf x with pr-12", "#NUMBER"),
        ("/perf x with #99999999999999999999", "#NUMBER"),
        ("/perf x with #2147483648", "#NUMBER"),
        ("/perf x with #0", "#NUMBER"),
        ("/perf x on", "needs hardware"),
        ("/perf x rounds", "needs a number"),
        ("/perf x with", "needs pull requests"),
        ("/perf cancel now", "takes no arguments"),
        ("/perfx", "starts with /perf"),
    ],
)
def test_errors_say_what_is_wrong(line: str, fragment: str) -> None:
    with pytest.raises(CommandError, match=fragment):
        parse_command(line)


def test_find_command_takes_the_first_perf_line() -> None:
    body = "Nice change.\r\n  /perf qwen-image-t2i-1024  \r\n/perf cancel\n"
    assert find_command(body) == "/perf qwen-image-t2i-1024"
    assert find_command("we should /perf this later") is None
    assert find_command("/performance is fine") is None


@pytest.mark.parametrize(
    "body",
    [
        "Usage:\n\n    /perf\n",  # an indented code block
        "````\n```\n/perf\n```\n````\n",  # a fence holding a shorter fence
        "~~~~\n~~~\n/perf cancel\n~~~\n~~~~\n",
        "<!--\nnot yet:\n/perf\n-->\n",  # a multi-line HTML comment
        "Later <!--\n/perf\n--> maybe.",  # the same, inside a paragraph
        "<details>\n/perf\n</details>\n",  # an HTML block
        "> /perf\n",
        "> quoting someone\n/perf\n",  # a quote's lazy continuation line is quoted too
        "- /perf\n",
        "`/perf`\n",
        "**/perf**\n",
        "\\/perf\n",
        "/perf\n---\n",  # a heading
    ],
)
def test_perf_lines_github_does_not_show_as_text_are_not_commands(body: str) -> None:
    assert find_command(body) is None


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("/perf", "/perf"),
        ("Thanks!\n\n/perf wan* rounds 2\n", "/perf wan* rounds 2"),
        ("```\n/perf\n```\n/perf cancel", "/perf cancel"),
        ("````\n```\n````\n/perf help", "/perf help"),
        ("<!-- a note -->\n\n/perf", "/perf"),
        ("> /perf help\n\n/perf *t2i* qwen-image-*", "/perf *t2i* qwen-image-*"),
        ("    indented\n\n/perf x  \n/perf y", "/perf x"),
    ],
)
def test_perf_lines_of_paragraphs_are_commands(body: str, command: str) -> None:
    assert find_command(body) == command


def test_globs_expand_in_order_without_duplicates() -> None:
    assert expand_cases(["wan*", "wan2.2-*", "qwen-image-t2i-1024"], SLUGS) == [
        "wan2.1-t2v-1.3b",
        "wan2.2-t2v-a14b",
        "qwen-image-t2i-1024",
    ]


def test_unknown_case_lists_the_valid_ones() -> None:
    with pytest.raises(CommandError) as raised:
        expand_cases(["flux*", "qwen-image-t2i-1024"], SLUGS)
    message = str(raised.value)
    assert "`flux*`" in message
    assert "wan2.2-t2v-a14b" in message
    assert "qwen-image-2.1-serve-gb300" in message


def test_hardware_is_case_insensitive_and_unknown_ones_list_the_valid() -> None:
    assert check_hardware(["h200", "GB300"], ["GB300", "H200", "H100"]) == ["H200", "GB300"]
    with pytest.raises(CommandError, match="unknown hardware `A100`; valid: GB300, H100, H200"):
        check_hardware(["A100"], ["GB300", "H200", "H100"])
