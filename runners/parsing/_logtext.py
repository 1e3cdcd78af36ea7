"""Turning raw ``sglang generate`` console output into clean logical lines and values.

Console captures are messy: ANSI colour codes, tqdm redrawing one line with ``\\r``, log records
glued onto the end of a progress bar (tqdm writes to stderr, logging to stdout), and logs pasted
into files as ``# `` comments. Everything here is pure string work; nothing knows about requests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

# CSI sequences (colours, erase-line), OSC sequences (terminal titles, links) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

# sglang's diffusion logger prefixes records with "[MM-DD HH:MM:SS]"; allow a year, fractional
# seconds and a short suffix (rank tags such as "TP0") so other logger configurations still match.
_TIMESTAMP = r"\[(?:\d{4}-)?\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?: [^\]\n]{1,24})?\]"
_LEADING_TIMESTAMP = re.compile(rf"^\s*{_TIMESTAMP}\s?")
_INNER_TIMESTAMP = re.compile(rf"(?<=\S){_TIMESTAMP}")
_COMMENT_PREFIX = re.compile(r"^\s*# ?")

# A number as a log prints it, plus the nan/inf spellings Python would print for broken timers:
# those must be *recognised* so they can be rejected with a warning instead of silently skipped.
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"

_TQDM = re.compile(r"(?P<pct>\d{1,3})%\|[^|\n]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*\[(?P<inner>[^\]\n]*)\]")
_TQDM_RATE = re.compile(r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]+/s|s/[A-Za-z]+)")

_CONTROL_OK = frozenset("\t\n\r\x1b")


@dataclass(frozen=True, slots=True)
class Progress:
    """One tqdm progress update: ``n`` of ``total`` done, with the bar's description if any."""

    n: int
    total: int
    desc: str
    seconds_per_item: float | None  # from "1.41it/s" or "7.52s/it"; smoothed by tqdm, so display only


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor and erase-line codes)."""
    return _ANSI.sub("", text)


def clean_console_text(text: str) -> str:
    """Console output as the runner's readers expect it: with no ANSI escape sequences.

    sglang colours values inside its records (``Output saved to {CYAN}path{RESET}``, see
    ``runtime/utils/logging_utils.py``), so a reader matching raw text would take the codes
    into what it reads. The text is cleaned once where it is captured; every reader also calls
    this at its own entry, which changes nothing on clean text.
    """
    return strip_ansi(text)


def logical_lines(text: str) -> Iterator[str]:
    """Yield the log's records one per item, cleaned of colour codes, ``# `` and timestamps."""
    cleaned = clean_console_text(text)
    for physical in cleaned.split("\n"):
        # Every "\r" segment is kept, not only the last: a TTY capture holds each tqdm redraw,
        # and a log record written while the bar was open follows its last "\r" on the same line.
        for segment in physical.split("\r"):
            segment = _COMMENT_PREFIX.sub("", segment, count=1)
            for piece in _split_glued_records(segment):
                piece = _LEADING_TIMESTAMP.sub("", piece, count=1).rstrip()
                if piece.strip():
                    yield piece


def _split_glued_records(segment: str) -> list[str]:
    """Split a line where a timestamped record was appended to other output (e.g. a tqdm bar)."""
    starts = [m.start() for m in _INNER_TIMESTAMP.finditer(segment)]
    if not starts:
        return [segment]
    pieces, previous = [], 0
    for start in starts:
        pieces.append(segment[previous:start])
        previous = start
    pieces.append(segment[previous:])
    return pieces


def parse_progress(line: str) -> Progress | None:
    """Read a tqdm progress bar (``12/40 [01:30<03:30, 7.52s/it]``) from a line, if it holds one."""
    match = _TQDM.search(line)
    if match is None:
        return None
    n, total = int(match["n"]), int(match["total"])
    if total <= 0 or n > total:
        return None
    desc = line[: match.start()].strip().rstrip(":").strip()
    seconds_per_item = None
    rate = _TQDM_RATE.search(match["inner"])
    if rate is not None:
        value = float(rate["value"])
        unit = rate["unit"]
        if unit.startswith("s/"):
            seconds_per_item = value
        elif value > 0:
            seconds_per_item = 1.0 / value
    return Progress(n=n, total=total, desc=desc, seconds_per_item=seconds_per_item)


def valid_number(raw: str) -> float | None:
    """Return ``raw`` as a float if it is a finite number >= 0, else ``None``."""
    try:
        value = float(raw)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def seconds_to_ms(seconds: float) -> float:
    """Convert seconds to milliseconds, rounded so 0.7076 s gives 707.6 rather than 707.6000000000001."""
    # Logs print at most 4 decimals of a second; 6 decimals of a millisecond lose nothing.
    return round(seconds * 1000.0, 6)


def gib_to_mib(gib: float) -> float:
    """Convert sglang's "GB" figures (really GiB: bytes / 1024**3) to MiB."""
    return round(gib * 1024.0, 6)


def looks_binary(text: str) -> bool:
    """Tell whether ``text`` is mostly not text (NUL bytes, control characters, decode failures)."""
    if not text:
        return False
    sample = text[:65536]
    odd = sum(1 for ch in sample if (ord(ch) < 32 and ch not in _CONTROL_OK) or ch == "\ufffd")
    return odd / len(sample) > 0.05


def shorten(text: str, limit: int = 240) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters for use in a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
