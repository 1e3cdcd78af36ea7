"""Repository path globs (``python/**/qwen_image*.py``) and the cases a set of changed files selects.

Globs are read as ``.gitignore`` lines are (the ``pathspec`` library): ``*`` and ``?`` stay inside
one path segment, ``**`` as a whole segment spans any number of segments (none included), ``[abc]``
is a class; a pattern without ``/`` matches a file name in any directory (``*.cu``), a trailing
``/`` matches everything under a directory, and a leading ``!`` excludes what an earlier glob of
the same case selected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pathspec import PathSpec, Pattern


@lru_cache(maxsize=1024)
def path_spec(globs: tuple[str, ...]) -> PathSpec[Pattern]:
    """The matcher for one case's globs (compiled once per set of globs)."""
    return PathSpec.from_lines("gitignore", globs)


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
        spec = path_spec(tuple(globs))
        hit = next((path for path in files if spec.match_file(path)), None)
        if hit is not None:
            chosen.append(slug)
            because[slug] = hit
    if not chosen:
        return CaseSelection(chosen=[slug for slug, _ in listed], fallback=True)
    return CaseSelection(chosen=chosen, because=because)
