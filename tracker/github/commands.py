"""Parse ``/perf`` commands from pull-request comments (pure: no database, no network).

Grammar, one line of a comment, words separated by spaces::

    /perf                                   the default cases on their hardware
    /perf help
    /perf cancel
    /perf [CASE ...] [on HW[,HW ...]] [rounds N] [with #PR ...]

``CASE`` is a slug or an fnmatch glob (``qwen-image-*``); ``HW`` a hardware kind name; ``#PR``
pull requests stacked under both arms. Clauses come in any order after the cases.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

from tracker.errors import InvalidInput
from tracker.github.render import code

PREFIX = "/perf"
MAX_ROUNDS = 64
MAX_PR_NUMBER = 2**31 - 1  # GitHub's numbers fit a 32-bit integer, as the database stores them
_PR = re.compile(r"^#?([0-9]{1,10})$")
# GitHub's Markdown: CommonMark and its tables. Escapes stay tokens of their own (no text_join), so
# an escaped \/perf is not read as a command.
_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")
_PLACEHOLDER = "\ufffc"
_KEPT_MARKUP = frozenset(
    ("em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close", "text_special")
)

HELP = """\
**perftrack** measures this pull request against its merge base, in interleaved rounds.

```
/perf                                   the cases of the files this PR touches (else all)
/perf CASE [CASE ...]                   cases by slug or glob (qwen-image-*)
/perf ... on H200,GB300                 only these hardware kinds
/perf ... rounds 4                      rounds to start with (more follow when inconclusive)
/perf ... with #43601 #43602            stack other pull requests under both arms
/perf cancel                            cancel this pull request's running comparison
/perf help                              this text
```

A command is read once, when its comment is posted: edit a comment and nothing runs; post a new one.
After `/perf cancel`, pushes are not measured until the next `/perf`."""


class CommandError(InvalidInput):
    """A ``/perf`` command that cannot be carried out; the message is shown to the user as it is."""

    def __init__(self, message: str) -> None:
        super().__init__("command", message)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PerfCommand:
    """One parsed ``/perf`` command."""

    action: Literal["run", "cancel", "help"]
    text: str
    cases: tuple[str, ...] = ()
    hardware: tuple[str, ...] = ()
    rounds: int | None = None
    stacked: tuple[int, ...] = ()


def find_command(body: str) -> str | None:
    """The first line of a comment that is a ``/perf`` command, stripped; ``None`` when none is.

    The comment is read as GitHub renders it (CommonMark, with GitHub's tables): only the lines of
    top-level paragraphs are commands. Code (fenced or indented), HTML blocks and comments, quotes
    (``> /perf``, with their lazy continuation lines), list items, headings and tables are text:
    the bot's own help shows commands that way, and so does anyone quoting or documenting one. A
    line that starts with markup (``**/perf**``, an escaped ``\\/perf``) is text too.
    """
    tokens = _MARKDOWN.parse(body)
    for before, token in itertools.pairwise(tokens):
        if token.type != "inline" or before.type != "paragraph_open" or before.level != 0:
            continue
        for line in _visible_text(token.children or []).splitlines():
            stripped = line.strip()
            if stripped == PREFIX or stripped.startswith(PREFIX + " "):
                return stripped
    return None


def _visible_text(children: Sequence[Token]) -> str:
    """A paragraph's text as written, one line per source line that starts outside code and HTML:
    a code span or an inline HTML comment stays on the line it starts on (a ``/perf`` inside one
    never starts a line), emphasis and escapes keep their markup (``/perf *t2i*`` is a glob,
    ``**/perf**`` and ``\\/perf`` are no commands), links and images become a placeholder."""
    parts: list[str] = []
    for child in children:
        if child.type == "text":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "code_inline":
            parts.append(f"{child.markup}{child.content}{child.markup}")
        elif child.type == "html_inline":
            parts.append(" ".join(child.content.splitlines()))
        elif child.type in _KEPT_MARKUP:
            parts.append(child.markup)
        else:
            parts.append(_PLACEHOLDER)
    return "".join(parts)


def parse_command(line: str) -> PerfCommand:
    """Parse one ``/perf`` line; :class:`CommandError` says what is wrong."""
    words = line.split()
    if not words or words[0] != PREFIX:
        raise CommandError(f"a command starts with {PREFIX}")
    text = " ".join(words)
    rest = words[1:]
    if rest and rest[0].lower() in ("help", "cancel"):
        if len(rest) > 1:
            raise CommandError(f"`{PREFIX} {rest[0].lower()}` takes no arguments")
        return PerfCommand(action="help" if rest[0].lower() == "help" else "cancel", text=text)
    cases: list[str] = []
    hardware: list[str] = []
    stacked: list[int] = []
    rounds: int | None = None
    clause = "cases"
    for word in rest:
        keyword = word.lower()
        if keyword in ("on", "rounds", "with"):
            clause = keyword
            continue
        if clause == "cases":
            cases.append(word)
        elif clause == "on":
            hardware.extend(name for name in word.split(",") if name)
        elif clause == "rounds":
            if rounds is not None:
                raise CommandError(f"`rounds` takes one number, not {code(word)} as well")
            rounds = _rounds(word)
        else:
            match = _PR.match(word.rstrip(","))
            if match is None or not 1 <= int(match.group(1)) <= MAX_PR_NUMBER:
                raise CommandError(f"`with` takes pull requests as #NUMBER, not {code(word)}")
            stacked.append(int(match.group(1)))
    if clause == "on" and not hardware:
        raise CommandError("`on` needs hardware kinds, e.g. `on H200,GB300`")
    if clause == "rounds" and rounds is None:
        raise CommandError("`rounds` needs a number, e.g. `rounds 4`")
    if clause == "with" and not stacked:
        raise CommandError("`with` needs pull requests, e.g. `with #43601`")
    return PerfCommand(
        action="run",
        text=text,
        cases=tuple(dict.fromkeys(cases)),
        hardware=tuple(dict.fromkeys(hardware)),
        rounds=rounds,
        stacked=tuple(dict.fromkeys(stacked)),
    )


def _rounds(word: str) -> int:
    if not word.isdigit() or not 1 <= int(word) <= MAX_ROUNDS:
        raise CommandError(f"`rounds` must be a whole number from 1 to {MAX_ROUNDS}, not {code(word)}")
    return int(word)


def expand_cases(patterns: Sequence[str], known: Iterable[str]) -> list[str]:
    """The known slugs the patterns name (globs allowed), in order; unknown ones list what is valid."""
    slugs = sorted(set(known))
    chosen: list[str] = []
    unknown: list[str] = []
    for pattern in patterns:
        matched = fnmatch.filter(slugs, pattern)
        if not matched:
            unknown.append(pattern)
        chosen.extend(matched)
    if unknown:
        names = ", ".join(code(name) for name in unknown)
        raise CommandError(f"unknown case {names}; valid cases: {', '.join(slugs) or 'none'}")
    return list(dict.fromkeys(chosen))


def check_hardware(names: Sequence[str], known: Iterable[str]) -> list[str]:
    """The hardware kinds as spelled in the catalog (case-insensitive); unknown ones list what is valid."""
    by_lower = {name.lower(): name for name in known}
    unknown = [name for name in names if name.lower() not in by_lower]
    if unknown:
        names_text = ", ".join(code(name) for name in unknown)
        raise CommandError(f"unknown hardware {names_text}; valid: {', '.join(sorted(by_lower.values()))}")
    return [by_lower[name.lower()] for name in names]
