"""The fake sglang's command line: the real option table of a published release, parsed as it does.

The fake must never be kinder than the real ``sglang``: it accepts exactly the options a published
release accepts, with their value shapes and choices, and refuses the rest the way that release's
entry point does. The tables in ``tests/data/sglang/options/<version>.json`` are recorded from the
real package by ``scripts/record_sglang_options.py`` and checked against it in
``tests/contract/sglang`` (a new release is one re-recording away).

How the real ``sglang generate`` / ``sglang serve`` (diffusion) treat an argv, which this mirrors:

- an option abbreviated so that it matches several (``--warmup`` in 0.5.23: ``--warmup-mode``,
  ``--warmup-steps`` ...), a value outside an option's choices, or a number that does not parse:
  argparse's error, exit 2;
- an option nobody declares: ``parse_known_args`` passes it on and ``ServerArgs.from_cli_args``
  raises ``SystemExit("error: unrecognized arguments: ...")``, exit 1;
- ``--help``: argparse's help of the diffusion parser; ``serve --help`` without
  ``--model-type diffusion`` prints the language-model server's help first, under headings.

Eras: ``current`` is sglang 0.5.23 (``--warmup-mode``), ``legacy`` is 0.5.10 (``--warmup``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

OPTIONS_DIR = Path(__file__).resolve().parent.parent / "data" / "sglang" / "options"
ERAS = {"current": "0.5.23", "legacy": "0.5.10"}
LLM_HEADING = "--- Help for Standard Language Model Server ---"
DIFFUSION_HEADING = "--- Help for Diffusion Model Server ---"


class UsageExit(Exception):
    """The real entry point would exit here with ``code``, having printed ``message`` to stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Parsed:
    """What the fake's argv says, in the names the rest of the fake reads."""

    values: dict[str, Any]

    def get(self, dest: str, default: Any = None) -> Any:
        """The parsed value of ``dest`` (``None``/``default`` when the release has no such option)."""
        value = self.values.get(dest, default)
        return default if value is None else value


def era() -> str:
    """``current`` or ``legacy``, from ``FAKE_SGLANG_ERA``."""
    chosen = os.environ.get("FAKE_SGLANG_ERA", "current")
    if chosen not in ERAS:
        raise SystemExit(f"FAKE_SGLANG_ERA={chosen!r}: use one of {', '.join(ERAS)}")
    return chosen


def load_table() -> dict[str, Any]:
    """The option table: ``FAKE_SGLANG_OPTIONS`` (a path), else the recorded one of the era."""
    path = os.environ.get("FAKE_SGLANG_OPTIONS") or str(OPTIONS_DIR / f"{ERAS[era()]}.json")
    table: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return table


class _StoreBoolean(argparse.Action):
    """sglang's boolean options: ``--flag`` alone, or ``--flag true|false``; other text raises."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values is None:
            setattr(namespace, self.dest, True)
            return
        text = str(values).lower()
        if text not in ("true", "false"):
            # Not an argparse error: the real action raises, and the process dies with a traceback.
            raise ValueError(f"Invalid boolean value: {values}. Expected 'true' or 'false'.")
        setattr(namespace, self.dest, text == "true")


class _NotImplemented(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        raise NotImplementedError(f"The {option_string} option is not yet implemented")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageExit(2, f"{self.format_usage()}{self.prog}: error: {message}\n")


_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str}


def build_parser(table: dict[str, Any], command: str) -> argparse.ArgumentParser:
    """An argparse parser with exactly the recorded options of ``command`` (``generate``/``serve``)."""
    parser = _Parser(prog="sglang", add_help=False, description="SGLang Multimodal Generation")
    for entry in table["commands"][command]:
        flags: list[str] = entry["flags"]
        kind = entry["kind"]
        kwargs: dict[str, Any] = {"dest": entry["dest"]}
        if kind == "help":
            parser.add_argument(*flags, action="help", help="show this help message and exit")
            continue
        if kind in ("store_true", "store_false", "count"):
            kwargs["action"] = kind
        elif kind in ("store_const", "append_const"):
            kwargs.update(action=kind, const=entry.get("const"))
        elif kind == "version":
            kwargs.update(action="version", version="0.1.0")
            kwargs.pop("dest")
        elif kind == "boolean":
            kwargs.update(action=_StoreBoolean, nargs="?")
        elif kind == "not_implemented":
            kwargs.update(action=_NotImplemented, nargs=entry.get("nargs"))
        else:
            kwargs["type"] = _TYPES.get(entry.get("type") or "str", str)
            if entry.get("nargs") is not None:
                kwargs["nargs"] = entry["nargs"]
            if entry.get("choices") is not None:
                kwargs["choices"] = entry["choices"]
            if kind == "append":
                kwargs["action"] = "append"
        parser.add_argument(*flags, **kwargs)
    return parser


def parse(command: str, argv: Sequence[str]) -> Parsed:
    """Parse ``argv`` as the release's ``sglang <command>`` does; :class:`UsageExit` where it exits."""
    parser = build_parser(load_table(), command)
    namespace, unknown = parser.parse_known_args(list(argv))
    if unknown:
        raise UsageExit(1, f"error: unrecognized arguments: {' '.join(unknown)}\n")
    return Parsed(vars(namespace))


def help_text(command: str, argv: Sequence[str]) -> str:
    """What ``sglang <command> [argv] --help`` prints."""
    parser = build_parser(load_table(), command)
    diffusion = parser.format_help()
    if command == "generate" or ("--model-type" in argv and era() == "current"):
        return diffusion
    # The serve wrapper cannot tell the backend without a model: it prints both servers' help.
    return (
        "Usage: sglang serve --model-path <model-name-or-path> [additional-arguments]\n\n"
        f"{LLM_HEADING}\n"
        "usage: sglang serve [-h] [--model-path MODEL_PATH] [--mem-fraction-static MEM_FRACTION_STATIC]\n\n"
        "options:\n"
        "  -h, --help            show this help message and exit\n"
        "  --model-path MODEL_PATH\n"
        "  --mem-fraction-static MEM_FRACTION_STATIC\n"
        "  --enable-mixed-chunk  Enabling mixing prefill and decode in a batch.\n\n"
        f"{DIFFUSION_HEADING}\n{diffusion}"
    )


def strip_model_type(argv: Sequence[str]) -> list[str]:
    """``serve``'s wrapper takes ``--model-type X`` out of the argv before any parser sees it."""
    kept: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--model-type":
            skip = True
        elif not word.startswith("--model-type="):
            kept.append(word)
    return kept


def parse_or_exit(command: str, argv: Sequence[str]) -> Parsed:
    """Parse, or print what the real entry point prints and exit with its code (``--help`` too)."""
    words = strip_model_type(argv) if command == "serve" else list(argv)
    if "-h" in words or "--help" in words:
        sys.stdout.write(help_text(command, argv))
        sys.stdout.flush()
        raise SystemExit(0)
    try:
        return parse(command, words)
    except UsageExit as refused:
        sys.stderr.write(refused.message)
        sys.stderr.flush()
        raise SystemExit(refused.code) from None
