"""The options one build of a command line accepts: read from its ``--help``, or from a recorded table.

sglang's command line changes between releases (``--warmup`` gave way to ``--warmup-mode`` in 0.5.18),
and a bisection or a backfill crosses releases, so the runner asks each candidate which options it
accepts instead of assuming one release's. Every entry point involved is an ``argparse`` parser, so
its ``--help`` lists each option once with the shape of its value (see :func:`parse_help`).

What is kept per option is only what rendering needs: does it take a value (none, an optional one,
exactly one, several) and, where the parser restricts them, its choices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["CliOption", "CliOptions", "HelpUnreadable", "ValueShape", "parse_help"]


class ValueShape(StrEnum):
    """How many values an option takes after its name."""

    NONE = "none"  # a switch: store_true, store_const, count, help
    OPTIONAL = "optional"  # nargs "?": ``--flag`` or ``--flag value`` (sglang's boolean options)
    ONE = "one"  # one value
    SEVERAL = "several"  # nargs "*", "+" or a number: a list of values


@dataclass(frozen=True, slots=True)
class CliOption:
    """One option as a parser accepts it: its long name (``--warmup-mode``), value shape, choices."""

    name: str
    shape: ValueShape
    choices: tuple[str, ...] | None = None

    def accepts(self, value: str) -> bool:
        """Whether ``value`` is one of the option's choices (any value when it has none)."""
        return self.choices is None or value in self.choices


class HelpUnreadable(ValueError):
    """A ``--help`` text that lists no option: not an argparse parser, or the command failed."""


@dataclass(frozen=True)
class CliOptions:
    """The options one command of one build accepts, and where that knowledge came from."""

    options: Mapping[str, CliOption]
    source: str = ""  # e.g. "`sglang generate --help` at 1a2b3c4"
    aliases: Mapping[str, str] = field(default_factory=dict)  # other spellings -> the name kept

    def get(self, name: str) -> CliOption | None:
        """The option spelled ``name`` (with its dashes), or ``None`` when this build has none."""
        kept = self.aliases.get(name, name)
        return self.options.get(kept)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    @classmethod
    def from_options(cls, options: Iterable[CliOption], *, source: str = "") -> CliOptions:
        """A table of ``options`` keyed by name."""
        return cls({option.name: option for option in options}, source=source)

    @classmethod
    def from_recorded(cls, table: Mapping[str, Any], command: str, *, source: str = "") -> CliOptions:
        """The options of ``command`` in a table recorded by ``scripts/record_sglang_options.py``.

        Each entry lists its option strings (``flags``), ``kind`` and ``nargs`` as argparse has them,
        and ``choices``; the first long option string is the name kept, the others are aliases.
        """
        options: dict[str, CliOption] = {}
        aliases: dict[str, str] = {}
        for entry in table["commands"][command]:
            flags = [flag for flag in entry["flags"] if flag.startswith("-")]
            if not flags:
                continue
            names = [flag for flag in flags if flag.startswith("--")] or flags
            option = CliOption(names[0], _recorded_shape(entry), _choices(entry.get("choices")))
            options[option.name] = option
            for other in flags:
                if other != option.name:
                    aliases[other] = option.name
        version = table.get("sglang", "?")
        return cls(
            options, source=source or f"recorded options of sglang {version} {command}", aliases=aliases
        )


def _recorded_shape(entry: Mapping[str, Any]) -> ValueShape:
    kind, nargs = entry.get("kind"), entry.get("nargs")
    if kind in ("store_true", "store_false", "store_const", "append_const", "count", "help", "version"):
        return ValueShape.NONE
    if nargs == "?":
        return ValueShape.OPTIONAL
    if nargs in ("*", "+") or (isinstance(nargs, int) and nargs > 1):
        return ValueShape.SEVERAL
    if nargs == 0:
        return ValueShape.NONE
    return ValueShape.ONE


def _choices(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    return tuple(str(choice) for choice in raw)


# ------------------------------------------------------------------ reading --help

# argparse indents an option's invocation by two spaces under its section heading; help text and
# wrapped lines are indented further (24 columns by default), so only these lines name options.
_INVOCATION_LINE = re.compile(r"^ {2}(?P<invocation>-\S.*?)(?: {2,}\S.*)?$")
_OPTION_PART = re.compile(r"^(?P<name>--?[^\s,=\[\]{}]+)(?:[ =](?P<args>.+))?$")
_CHOICES = re.compile(r"^\{(?P<choices>[^{}]*)\}$")
# `sglang serve --help` without a model prints the language-model server's help before the
# diffusion server's (0.5.10 and 0.5.23 alike); only the part after this heading is the diffusion CLI.
DIFFUSION_HELP_HEADING = "--- Help for Diffusion Model Server ---"


def parse_help(text: str, *, source: str = "") -> CliOptions:
    """The options an argparse ``--help`` text lists.

    An invocation reads ``-s ARG, --long ARG`` (Python before 3.13) or ``-s, --long ARG`` (3.13 on);
    ``ARG`` shows the value's shape: ``X`` one value, ``[X]`` optional, ``X [X ...]`` / ``[X ...]`` /
    ``X X`` several, ``{a,b}`` one of the choices, nothing a switch. When the text holds the diffusion
    server's heading (``sglang serve --help``), only what follows it is read.

    Raises
    ------
    HelpUnreadable
        When the text lists no option at all.
    """
    if DIFFUSION_HELP_HEADING in text:
        text = text.split(DIFFUSION_HELP_HEADING, 1)[1]
    options: dict[str, CliOption] = {}
    aliases: dict[str, str] = {}
    for line in text.splitlines():
        match = _INVOCATION_LINE.match(line.rstrip())
        if match is None:
            continue
        parsed = _invocation(match["invocation"])
        if parsed is None:
            continue
        names, shape, choices = parsed
        long_names = [name for name in names if name.startswith("--")] or names
        option = CliOption(long_names[0], shape, choices)
        options.setdefault(option.name, option)
        for other in names:
            if other != option.name:
                aliases.setdefault(other, option.name)
    if not options:
        raise HelpUnreadable("the help text lists no option")
    return CliOptions(options, source=source, aliases=aliases)


def _invocation(invocation: str) -> tuple[list[str], ValueShape, tuple[str, ...] | None] | None:
    """Names, value shape and choices of one ``-s ARG, --long ARG`` invocation."""
    names: list[str] = []
    args: str | None = None
    for part in invocation.split(", "):
        match = _OPTION_PART.match(part.strip())
        if match is None:
            return None
        names.append(match["name"])
        if match["args"]:
            args = match["args"].strip()
    shape, choices = _shape_of(args)
    return names, shape, choices


def _shape_of(args: str | None) -> tuple[ValueShape, tuple[str, ...] | None]:
    if not args:
        return ValueShape.NONE, None
    words = args.split()
    first = words[0]
    optional = first.startswith("[")
    bare = first.strip("[]")
    choices_match = _CHOICES.match(bare)
    choices = tuple(choices_match["choices"].split(",")) if choices_match else None
    if len(words) > 1:  # "X [X ...]", "[X ...]", "X X"
        return ValueShape.SEVERAL, choices
    return (ValueShape.OPTIONAL if optional else ValueShape.ONE), choices
