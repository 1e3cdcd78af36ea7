"""Repository path globs (``python/**/qwen_image*.py``) and the cases a set of changed files selects.

Globs follow the usual gitignore-like reading: ``*`` and ``?`` stay inside one path segment,
``**`` as a whole segment spans any number of segments (none included), ``[abc]`` is a class.
A pattern without ``/`` matches a file name in any directory (``*.cu``), as ``.gitattributes`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression a path glob stands for (anchored at both ends)."""
    if "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"
    parts: list[str] = []
    segments = pattern.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append(_segment(segment) + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z")


def _segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[index + 1 : end]
                negate = body.startswith("!")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether repository-relative ``path`` matches ``pattern``."""
    return compile_glob(pattern).match(path) is not None


@dataclass(frozen=True)
class CaseSelection:
    """The cases a pull request's files select, and which file selected each one."""

    chosen: list[str]
    because: dict[str, str] = field(default_factory=dict)
    fallback: bool = False

    def describe(self, files_seen: int, *, quote: Callable[[str], str] = lambda text: f"`{text}`") -> str:
        """One sentence for the PR comment: how the cases were chosen (``quote`` renders a name or path)."""
        if self.fallback:
            return (
                f"none of the {files_seen} files this PR touches selects a case, so every case of the "
                "repository runs"
            )
        reasons = ", ".join(f"{quote(slug)} ({quote(self.because[slug])})" for slug in self.chosen)
        return f"chosen from the {files_seen} files this PR touches: {reasons}"


def select_cases(cases: Iterable[tuple[str, Sequence[str]]], files: Sequence[str]) -> CaseSelection:
    """The cases (slug, globs) whose globs match one of ``files``; all of them when none does."""
    listed = list(cases)
    chosen: list[str] = []
    because: dict[str, str] = {}
    for slug, globs in listed:
        hit = next((path for path in files for pattern in globs if glob_matches(pattern, path)), None)
        if hit is not None:
            chosen.append(slug)
            because[slug] = hit
    if not chosen:
        return CaseSelection(chosen=[slug for slug, _ in listed], fallback=True)
    return CaseSelection(chosen=chosen, because=because)
