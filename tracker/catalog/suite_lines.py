"""Find the line of a TOML file that defines a given key path, for error messages.

``tomllib`` reports syntax errors with a line, but a value that parses and then fails
validation has no position. This scanner records where each table header and key assignment
sits, following ``[table]``, ``[[array.of.tables]]`` and dotted keys, which is all suite files use.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z0-9_\-\.\"' ]+?)\s*=")


def _split_key(raw: str) -> list[str]:
    return [part.strip().strip("\"'") for part in raw.split(".")]


def index_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """Map each key path (array entries as indices) to the 1-based line that defines it."""
    positions: dict[tuple[str | int, ...], int] = {}
    array_counts: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    in_multiline = False
    for number, line in enumerate(text.splitlines(), start=1):
        # Skip the inside of multi-line strings: their lines are values, not keys.
        quotes = line.count('"""') + line.count("'''")
        if in_multiline:
            if quotes % 2 == 1:
                in_multiline = False
            continue
        header = _HEADER.match(line)
        if header:
            path = _split_key(header.group(2))
            if header.group(1) == "[[":
                parent = (*_resolve(path[:-1], array_counts), path[-1])
                index = array_counts.get(parent, 0)
                array_counts[parent] = index + 1
                table = (*parent, index)
            else:
                table = _resolve(path, array_counts)
            positions.setdefault(table, number)
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            key_path = (*table, *_split_key(assignment.group(1)))
            for depth in range(len(table) + 1, len(key_path) + 1):
                positions.setdefault(key_path[:depth], number)
        if quotes % 2 == 1:
            in_multiline = True
    return positions


def _resolve(path: list[str], array_counts: dict[tuple[str | int, ...], int]) -> tuple[str | int, ...]:
    """Turn ``cases.params`` into ``("cases", 3, "params")`` when ``cases`` is an array of tables."""
    resolved: tuple[str | int, ...] = ()
    for part in path:
        resolved = (*resolved, part)
        if resolved in array_counts:
            resolved = (*resolved, array_counts[resolved] - 1)
    return resolved


def line_of(positions: dict[tuple[str | int, ...], int], location: Sequence[str | int]) -> int | None:
    """The line of the longest prefix of ``location`` that the file defines."""
    path = tuple(location)
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return None
