"""The candidate's own command line: reading a ``--help``, spelling a case in it, refusing by name."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from runners.workloads.cli.discovery import HelpFailed, OptionsCache
from runners.workloads.cli.intents import UnsupportedOption, render_for_build, warmup_mode
from runners.workloads.cli.options import (
    DIFFUSION_HELP_HEADING,
    CliOption,
    CliOptions,
    ValueShape,
    parse_help,
)

OPTIONS = Path(__file__).resolve().parents[2] / "data" / "sglang" / "options"


def sglang_like_parser() -> argparse.ArgumentParser:
    """A parser with every value shape sglang's parsers use, formatted by this Python's argparse."""
    parser = argparse.ArgumentParser(prog="sglang")
    parser.add_argument("--model-path", "--model", dest="model_path")
    parser.add_argument("--enable-torch-compile", nargs="?", const=True, default=False)
    parser.add_argument("--save-output", action="store_true")
    parser.add_argument("--warmup-mode", choices=("off", "request", "server"))
    parser.add_argument("--warmup-resolutions", nargs="+")
    parser.add_argument("--gpu-ids", nargs="*", type=int)
    parser.add_argument("--text-encoder-precisions", nargs="+", choices=("fp32", "bf16"))
    parser.add_argument("-n", "--num-gpus", type=int, help="how many GPUs " * 12)
    parser.add_argument("--a-very-long-option-name-that-pushes-the-help-to-the-next-line", type=float)
    group = parser.add_argument_group(
        "sampling", "Options of the request.\n  -indented text is not an option"
    )
    group.add_argument("--seed", nargs=2)
    return parser


def test_help_of_an_argparse_parser_gives_every_option_with_its_shape() -> None:
    build = parse_help(sglang_like_parser().format_help(), source="test")
    assert build.get("--model-path") == CliOption("--model-path", ValueShape.ONE)
    assert build.get("--model") == build.get("--model-path")  # an alias finds the same option
    assert build.get("--enable-torch-compile") == CliOption("--enable-torch-compile", ValueShape.OPTIONAL)
    assert build.get("--save-output") == CliOption("--save-output", ValueShape.NONE)
    assert build.get("--warmup-mode") == CliOption(
        "--warmup-mode", ValueShape.ONE, ("off", "request", "server")
    )
    assert build.get("--warmup-resolutions") == CliOption("--warmup-resolutions", ValueShape.SEVERAL)
    assert build.get("--gpu-ids") == CliOption("--gpu-ids", ValueShape.SEVERAL)
    assert build.get("--text-encoder-precisions") == CliOption(
        "--text-encoder-precisions", ValueShape.SEVERAL, ("fp32", "bf16")
    )
    assert build.get("-n") == CliOption("--num-gpus", ValueShape.ONE)
    assert build.get("--seed") == CliOption("--seed", ValueShape.SEVERAL)
    long_name = "--a-very-long-option-name-that-pushes-the-help-to-the-next-line"
    assert build.get(long_name) == CliOption(long_name, ValueShape.ONE)
    assert build.get("--help") == CliOption("--help", ValueShape.NONE)
    assert "--warmup" not in build  # a prefix of real options is not an option
    assert "-indented" not in build
    expected = {"--help", "--model-path", "--enable-torch-compile", "--save-output", "--warmup-mode"}
    assert expected < set(build.options)
    assert len(build.options) == 11


def test_python_3_13_invocations_name_the_argument_once() -> None:
    text = (
        "options:\n"
        "  -h, --help            show this help message and exit\n"
        "  -n, --num-gpus NUM_GPUS\n"
        "                        how many GPUs\n"
        "  -w, --warmup-mode {off,request,server}\n"
    )
    build = parse_help(text)
    assert build.get("-n") == CliOption("--num-gpus", ValueShape.ONE)
    assert build.get("--warmup-mode") == CliOption(
        "--warmup-mode", ValueShape.ONE, ("off", "request", "server")
    )


def test_serve_help_is_read_after_the_diffusion_heading() -> None:
    text = (
        "--- Help for Standard Language Model Server ---\n"
        "options:\n  --mem-fraction-static MEM_FRACTION_STATIC\n\n"
        f"{DIFFUSION_HELP_HEADING}\n"
        "options:\n  --port PORT\n"
    )
    build = parse_help(text)
    assert set(build.options) == {"--port"}


def test_a_help_without_options_is_unreadable() -> None:
    with pytest.raises(ValueError, match="lists no option"):
        parse_help("Traceback (most recent call last):\nImportError: no module named torch\n")


@pytest.mark.parametrize("version", ["0.5.23", "0.5.10"])
def test_the_recorded_tables_and_the_help_they_make_agree(version: str) -> None:
    """The fake prints help from the recorded table; reading it back gives the table's options."""
    from tests.fakes.sglang_cli import build_parser

    table = json.loads((OPTIONS / f"{version}.json").read_text(encoding="utf-8"))
    for command in ("generate", "serve"):
        recorded = CliOptions.from_recorded(table, command)
        read = parse_help(build_parser(table, command).format_help())
        assert read.options == recorded.options
        assert dict(read.aliases) == dict(recorded.aliases)


# ------------------------------------------------------------------ spelling a case for a build


def build_of(*options: CliOption) -> CliOptions:
    return CliOptions.from_options(options, source="`sglang generate` at 1a2b3c4d5e6f")


MODERN = build_of(
    CliOption("--model-path", ValueShape.ONE),
    CliOption("--enable-torch-compile", ValueShape.OPTIONAL),
    CliOption("--save-output", ValueShape.NONE),
    CliOption("--warmup-mode", ValueShape.ONE, ("off", "request", "server")),
    CliOption("--seed", ValueShape.SEVERAL),
    CliOption("--num-gpus", ValueShape.ONE),
)
LEGACY = build_of(
    CliOption("--model-path", ValueShape.ONE),
    CliOption("--enable-torch-compile", ValueShape.NONE),
    CliOption("--warmup", ValueShape.OPTIONAL),
    CliOption("--server-warmup", ValueShape.OPTIONAL),
)


def test_values_render_by_the_options_shape_in_the_build() -> None:
    options = [("model-path", "Q"), ("enable-torch-compile", True), ("save-output", "true"), ("seed", [1, 2])]
    assert render_for_build(options, MODERN) == [
        "--model-path", "Q", "--enable-torch-compile", "--save-output", "--seed", "1", "2",
    ]  # fmt: skip
    # False and None leave an option out, whether or not the build has it.
    assert render_for_build([("no-such", False), ("other", None), ("save-output", False)], MODERN) == []
    # True to an option that needs a value says so in words.
    assert render_for_build([("num-gpus", True)], MODERN) == ["--num-gpus", "true"]


@pytest.mark.parametrize(
    ("value", "modern", "legacy"),
    [
        (True, ["--warmup-mode", "request"], ["--warmup"]),
        ("request", ["--warmup-mode", "request"], ["--warmup"]),
        ("server", ["--warmup-mode", "server"], ["--warmup", "--server-warmup"]),
        (False, ["--warmup-mode", "off"], []),
        ("off", ["--warmup-mode", "off"], []),
        (None, [], []),
    ],
)
def test_warmup_is_an_intent_spelled_per_build(value: object, modern: list[str], legacy: list[str]) -> None:
    assert render_for_build([("warmup", value)], MODERN) == modern
    assert render_for_build([("warmup", value)], LEGACY) == legacy


def test_an_option_the_build_lacks_is_refused_by_name_and_commit() -> None:
    with pytest.raises(UnsupportedOption) as refused:
        render_for_build([("model-path", "Q"), ("offload-during-compile", True)], MODERN)
    assert refused.value.option == "--offload-during-compile"
    assert str(refused.value) == "`sglang generate` at 1a2b3c4d5e6f has no option --offload-during-compile"


def test_warmup_without_any_spelling_is_refused() -> None:
    bare = build_of(CliOption("--model-path", ValueShape.ONE))
    with pytest.raises(UnsupportedOption) as refused:
        render_for_build([("warmup", True)], bare)
    assert refused.value.option == "warmup"
    assert "neither --warmup-mode request nor --warmup" in str(refused.value)
    assert "1a2b3c4d5e6f" in str(refused.value)
    with pytest.raises(UnsupportedOption, match="none of true, false, request, server, off"):
        warmup_mode("sometimes")


def test_values_outside_choices_or_given_to_a_switch_are_refused() -> None:
    with pytest.raises(
        UnsupportedOption, match=r"does not accept --warmup-mode later \(choices: off, request, server\)"
    ):
        render_for_build([("warmup-mode", "later")], MODERN)
    with pytest.raises(UnsupportedOption, match="takes --save-output without a value; the case gives 'fast'"):
        render_for_build([("save-output", "fast")], MODERN)
    with pytest.raises(UnsupportedOption, match="takes one value after --num-gpus; the case gives 2"):
        render_for_build([("num-gpus", [1, 2])], MODERN)


# ------------------------------------------------------------------ asking the build


def counting_cli(tmp_path: Path, body: str) -> tuple[list[str], Path]:
    """A command line that counts how often it is asked, then runs ``body``."""
    calls = tmp_path / "calls"
    script = tmp_path / "cli.py"
    script.write_text(
        f"import sys\nopen({str(calls)!r}, 'a').write('x')\n{body}\n",
        encoding="utf-8",
    )
    return [sys.executable, str(script)], calls


def test_options_are_asked_once_per_commit(tmp_path: Path) -> None:
    argv, calls = counting_cli(
        tmp_path, "print('options:\\n  --warmup-mode {off,request,server}\\n  --model-path MODEL_PATH')"
    )
    cache = OptionsCache()
    first = cache.options([*argv, "--help"], commit="a" * 40, env={}, cwd=tmp_path, label="sglang generate")
    again = cache.options([*argv, "--help"], commit="a" * 40, env={}, cwd=tmp_path, label="sglang generate")
    other = cache.options([*argv, "--help"], commit="b" * 40, env={}, cwd=tmp_path, label="sglang generate")
    assert first is again
    assert other.get("--warmup-mode") is not None
    assert calls.read_text() == "xx"
    assert first.source == f"`sglang generate` at {'a' * 12}"


def test_a_failing_help_is_reported_and_asked_again_next_time(tmp_path: Path) -> None:
    argv, calls = counting_cli(
        tmp_path, "sys.stderr.write('ImportError: cannot import torch\\n'); sys.exit(1)"
    )
    cache = OptionsCache()
    for _ in range(2):
        with pytest.raises(HelpFailed) as failed:
            cache.options([*argv, "--help"], commit="c" * 40, env={}, cwd=tmp_path, label="sglang generate")
        assert "exited with code 1" in str(failed.value)
        assert "ImportError: cannot import torch" in str(failed.value)
        assert f"`sglang generate` at {'c' * 12}" in str(failed.value)
    assert calls.read_text() == "xx"  # a failure is not kept


def test_a_help_that_lists_nothing_or_hangs_is_a_failure(tmp_path: Path) -> None:
    argv, _ = counting_cli(tmp_path, "print('sglang 0.1.0')")
    with pytest.raises(HelpFailed, match="could not read the options"):
        OptionsCache().options(argv, commit="d" * 40, env={}, cwd=tmp_path, label="x")
    argv, _ = counting_cli(tmp_path, "import time; time.sleep(30)")
    with pytest.raises(HelpFailed, match=r"took more than 0\.5 s"):
        OptionsCache(timeout_s=0.5).options(argv, commit="e" * 40, env={}, cwd=tmp_path, label="x")
