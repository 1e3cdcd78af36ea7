"""A case's options turned into the words one build of the command line accepts, or refused by name.

A case is written once and measured across many commits, so most of its options are sglang's own
names, rendered as they are, and a few are **intents** whose spelling the runner chooses per build:

``warmup``
    Run one warmup request before the measured one(s), so that compilation is not measured.
    ``true`` (or ``"request"``) renders ``--warmup-mode request`` where the build has it (sglang
    0.5.14 and later), else ``--warmup`` (0.5.17 and earlier). ``"server"`` asks for the server's own
    synthetic warmup (``--warmup-mode server``, or ``--warmup --server-warmup``); ``false`` /
    ``"off"`` renders ``--warmup-mode off`` where it exists and nothing where it does not.

    Why not leave it to sglang's default: with torch.compile on, 0.5.18+ defaults to the *server*
    mode, which only the HTTP server runs; ``sglang generate`` then measures the compiling request
    while still printing "(with warmup excluded)". Dropping the flag would silently count compile
    time, so the request mode is spelled out.

Every other option must exist in the build under its own name (argparse would otherwise accept an
abbreviation of a *different* option, or call it ambiguous and exit 2). A value is rendered by the
option's shape in this build: ``true`` to a switch gives ``--flag``, to an option that takes a value
``--flag true``; ``"true"``/``"false"`` text to a switch gives ``--flag`` / nothing. An option the
build lacks, a value outside its choices or a value given to a switch raises
:class:`UnsupportedOption`, which the workload reports as a setup failure naming the option and the
commit: never a run, never a measurement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from runners.workloads.cli.options import CliOption, CliOptions, ValueShape

__all__ = ["INTENTS", "UnsupportedOption", "render_for_build", "render_option", "warmup_mode"]

_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class UnsupportedOption(ValueError):
    """An option (or intent) of the case that this build of the command line cannot express."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option  # the option (``--warmup-mode``) or intent (``warmup``) refused


def render_for_build(options: Iterable[tuple[str, Any]], build: CliOptions) -> list[str]:
    """Argv words for ``(name, value)`` pairs (names without dashes), spelled as ``build`` accepts them.

    ``False`` and ``None`` leave an option out, as the suite files promise. Raises
    :class:`UnsupportedOption` for the first option ``build`` cannot take.
    """
    words: list[str] = []
    for name, value in options:
        intent = INTENTS.get(name)
        if intent is not None and value is not None:
            words += intent(value, build)
        elif intent is None:
            words += render_option(f"--{name}", value, build)
    return words


def render_option(flag: str, value: Any, build: CliOptions) -> list[str]:
    """Words for one ordinary option; see the module docstring for how values render."""
    if value is False or value is None:
        return []
    option = build.get(flag)
    if option is None:
        raise UnsupportedOption(flag, f"{_where(build)} has no option {flag}")
    return [option.name, *_value_words(option, value, build)]


def _value_words(option: CliOption, value: Any, build: CliOptions) -> list[str]:
    if option.shape is ValueShape.NONE:
        return _switch(option, value, build)
    if value is True:
        return [] if option.shape is ValueShape.OPTIONAL else ["true"]
    values = list(value) if isinstance(value, list | tuple) else [value]
    if len(values) > 1 and option.shape is not ValueShape.SEVERAL:
        raise UnsupportedOption(
            option.name, f"{_where(build)} takes one value after {option.name}; the case gives {len(values)}"
        )
    words = [_word(item) for item in values]
    for word in words:
        if not option.accepts(word):
            allowed = ", ".join(option.choices or ())
            raise UnsupportedOption(
                option.name, f"{_where(build)} does not accept {option.name} {word} (choices: {allowed})"
            )
    return words


def _switch(option: CliOption, value: Any, build: CliOptions) -> list[str]:
    """A switch takes no value: ``true`` / ``"true"`` is the switch itself; ``"false"`` was left out."""
    if value is True:
        return []
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS:
        return []
    raise UnsupportedOption(
        option.name, f"{_where(build)} takes {option.name} without a value; the case gives {value!r}"
    )


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _where(build: CliOptions) -> str:
    return build.source or "this build"


# ------------------------------------------------------------------ intents

Intent = Callable[[Any, CliOptions], list[str]]


def warmup_mode(value: Any) -> str:
    """The warmup a case's ``warmup`` value asks for: ``off``, ``request`` or ``server``."""
    if isinstance(value, bool):
        return "request" if value else "off"
    text = str(value).strip().lower()
    if text in _TRUE_WORDS or text == "request":
        return "request"
    if text in _FALSE_WORDS:
        return "off"
    if text == "server":
        return "server"
    raise UnsupportedOption(
        "warmup", f"the case's warmup = {value!r} is none of true, false, request, server, off"
    )


def warmup(value: Any, build: CliOptions) -> list[str]:
    """``warmup``: see the module docstring."""
    mode = warmup_mode(value)
    modern = build.get("--warmup-mode")
    if modern is not None and modern.accepts(mode):
        return [modern.name, mode]
    legacy = build.get("--warmup")
    if mode == "off":
        return []  # the build has no explicit "off": without the flag it does not warm up
    if legacy is not None and mode == "request":
        return [legacy.name]
    server = build.get("--server-warmup")
    if legacy is not None and server is not None and mode == "server":
        return [legacy.name, server.name]
    needs = {
        "request": "neither --warmup-mode request nor --warmup",
        "server": "neither --warmup-mode server nor --warmup with --server-warmup",
    }[mode]
    raise UnsupportedOption("warmup", f"{_where(build)} has {needs}, which the case's warmup = {mode} needs")


INTENTS: Mapping[str, Intent] = {"warmup": warmup}
