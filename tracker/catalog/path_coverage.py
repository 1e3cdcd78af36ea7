"""Which suite ``paths`` globs still match a file of the repository they were written for.

A glob that matches nothing fails silently: the files it meant now live elsewhere (sglang turned
``runtime/server_args.py`` into a package) or were never named that way (``zimage.py``, not
``z_image.py``), so a pull request touching them no longer selects its case for a bare ``/perf``.
:func:`check_coverage` is the pure decision over a suite's globs and a list of repository files,
with the matcher the tracker selects cases with (:func:`tracker.catalog.paths.path_spec`);
:func:`read_suite_globs` and :func:`tree_files` load its inputs from a suite file and a tree.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pathspec import PathSpec, Pattern

from tracker.catalog.paths import path_spec
from tracker.catalog.suite_schema import SuiteFile
from tracker.catalog.suites import parse_suite
from tracker.errors import ExternalServiceError, SuiteError

DEFAULTS = "defaults"
"""The owner named for a glob of a suite's ``[defaults] paths`` (shared by every case)."""


class TreeUnavailable(ExternalServiceError):
    """The files of a repository tree cannot be listed (not a directory, or git failed)."""


class DeadReason(StrEnum):
    """Why a glob selects nothing."""

    MATCHES_NOTHING = "matches-nothing"  # no file of the tree matches it
    EXCLUDES_NOTHING = "excludes-nothing"  # a ``!glob`` that takes back none of the files before it
    INVALID = "invalid"  # not a glob at all (``!``, a trailing ``\``, a ``#`` comment)


@dataclass(frozen=True)
class CaseGlobs:
    """A case's slug and its globs in the order the tracker matches them (its own, then the defaults)."""

    slug: str
    globs: tuple[str, ...]


@dataclass(frozen=True)
class SuiteGlobs:
    """The globs of one suite file: its ``[defaults] paths`` and each case's resolved ``paths``."""

    name: str
    path: str
    defaults: tuple[str, ...]
    cases: tuple[CaseGlobs, ...]


@dataclass(frozen=True)
class DeadGlob:
    """A glob that selects nothing, where it is written (``owner``: a case slug or ``defaults``)."""

    suite: str
    owner: str
    glob: str
    reason: DeadReason
    detail: str = ""

    def describe(self) -> str:
        """``sglang-diffusion / defaults: `sgl-kernel/**` matches no file``."""
        what = {
            DeadReason.MATCHES_NOTHING: "matches no file",
            DeadReason.EXCLUDES_NOTHING: "excludes no file the globs before it select",
            DeadReason.INVALID: f"is not a valid glob ({self.detail})"
            if self.detail
            else "is not a valid glob",
        }[self.reason]
        return f"{self.suite} / {self.owner}: `{self.glob}` {what}"


@dataclass(frozen=True)
class CaseCoverage:
    """How many files of the tree select a case; ``None`` when its globs do not compile."""

    slug: str
    own_files: int | None  # by the case's own globs
    files: int | None  # by all its globs, the defaults included: what a bare /perf matches


@dataclass(frozen=True)
class SuiteCoverage:
    """The files the defaults and each case of one suite select."""

    suite: str
    defaults_files: int | None
    cases: tuple[CaseCoverage, ...]


@dataclass(frozen=True)
class CoverageReport:
    """The globs that select nothing in a tree of ``files_listed`` files, and what each case selects."""

    files_listed: int
    suites: tuple[SuiteCoverage, ...]
    dead: tuple[DeadGlob, ...]

    @property
    def ok(self) -> bool:
        """Whether every glob selects something."""
        return not self.dead


def check_coverage(suites: Sequence[SuiteGlobs], files: Sequence[str]) -> CoverageReport:
    """Every glob that selects no file of ``files`` (repository-relative, ``/``-separated).

    Parameters
    ----------
    suites
        The suites' globs; each case's globs as resolved by the tracker (own, then defaults).
    files
        Every file of the tree, as ``git ls-files`` names them.

    Returns
    -------
    CoverageReport
        Dead globs in suite order (the defaults first, then each case's own globs), and per case
        the number of files its own globs and all its globs select. A positive glob is dead when it
        alone matches no file; a ``!glob`` when no file the globs before it select matches it, in
        any case it belongs to.
    """
    checker = _Checker(list(files))
    checked = [_check_suite(suite, checker) for suite in suites]
    return CoverageReport(
        files_listed=len(checker.files),
        suites=tuple(coverage for coverage, _ in checked),
        dead=tuple(dead for _, problems in checked for dead in problems),
    )


def _check_suite(suite: SuiteGlobs, checker: _Checker) -> tuple[SuiteCoverage, list[DeadGlob]]:
    """One suite's coverage and dead globs; a glob of the defaults is reported once, as theirs."""
    problems: dict[tuple[str, str], DeadGlob] = {}
    excludes_somewhere: dict[str, bool] = {}  # a defaults' !glob is alive if it excludes in one case
    cases: list[CaseCoverage] = []
    for case in suite.cases:
        for index, glob in enumerate(case.globs):
            owner = DEFAULTS if glob in suite.defaults else case.slug
            problem = checker.problem(glob, before=case.globs[:index])
            if owner == DEFAULTS and glob.startswith("!") and problem is not DeadReason.INVALID:
                excludes_somewhere[glob] = excludes_somewhere.get(glob, False) or problem is None
            elif problem is not None:
                dead = DeadGlob(suite.name, owner, glob, problem, checker.invalid.get(glob, ""))
                problems.setdefault((owner, glob), dead)
        own = tuple(glob for glob in case.globs if glob not in suite.defaults)
        cases.append(CaseCoverage(case.slug, checker.count(own), checker.count(case.globs)))
    for glob, alive in excludes_somewhere.items():
        if not alive:
            problems[(DEFAULTS, glob)] = DeadGlob(suite.name, DEFAULTS, glob, DeadReason.EXCLUDES_NOTHING)
    position = {glob: index for index, glob in enumerate(suite.defaults)}
    # The defaults' globs first, in their written order; then the cases' (insertion order, kept by sort).
    ordered = sorted(problems.values(), key=lambda dead: (dead.owner != DEFAULTS, position.get(dead.glob, 0)))
    return SuiteCoverage(suite.name, checker.count(suite.defaults), tuple(cases)), ordered


class _Checker:
    """Glob tests over one file list; each glob is compiled once and scanned at most once."""

    def __init__(self, files: list[str]) -> None:
        self.files = files
        self.invalid: dict[str, str] = {}  # glob -> why it is not one
        self._valid: set[str] = set()
        self._matches_any: dict[str, bool] = {}

    def valid(self, glob: str) -> bool:
        """Whether ``glob`` is one glob pathspec can match with (noting why not in ``invalid``)."""
        if glob in self._valid or glob in self.invalid:
            return glob in self._valid
        try:
            patterns = path_spec((glob,)).patterns
        except ValueError as error:  # pathspec's GitIgnorePatternError
            self.invalid[glob] = str(error)
            return False
        if not patterns or patterns[0].include is None:
            self.invalid[glob] = "a blank line or a comment, not a glob"
            return False
        self._valid.add(glob)
        return True

    def spec(self, globs: tuple[str, ...]) -> PathSpec[Pattern] | None:
        """The tracker's matcher for ``globs``; ``None`` when one of them is not a glob."""
        return path_spec(globs) if all(self.valid(glob) for glob in globs) else None

    def problem(self, glob: str, *, before: tuple[str, ...]) -> DeadReason | None:
        """Why ``glob``, written after ``before`` in one case, selects nothing (``None``: it does)."""
        if not self.valid(glob):
            return DeadReason.INVALID
        if not glob.startswith("!"):
            if glob not in self._matches_any:
                self._matches_any[glob] = any(path_spec((glob,)).match_files(self.files))
            return None if self._matches_any[glob] else DeadReason.MATCHES_NOTHING
        earlier = self.spec(before)
        if earlier is None or not before:
            return DeadReason.EXCLUDES_NOTHING  # nothing selected before it (or that cannot be known)
        taken_back = path_spec((glob[1:],))
        hit = any(taken_back.match_file(path) for path in earlier.match_files(self.files))
        return None if hit else DeadReason.EXCLUDES_NOTHING

    def count(self, globs: tuple[str, ...]) -> int | None:
        """Files ``globs`` select together, ``None`` when one of them is not a glob."""
        if not globs:
            return 0
        spec = self.spec(globs)
        return None if spec is None else sum(1 for _ in spec.match_files(self.files))


def suite_globs(text: str, path: str = "<suite>") -> SuiteGlobs:
    """A suite file's globs; the file is validated as :func:`parse_suite` does (raises SuiteError)."""
    suite = parse_suite(text, path)
    defaults = SuiteFile.model_validate(tomllib.loads(text)).defaults.paths
    return SuiteGlobs(
        name=suite.name,
        path=path,
        defaults=tuple(defaults),
        cases=tuple(CaseGlobs(case.slug, tuple(case.paths)) for case in suite.cases),
    )


def read_suite_globs(path: Path) -> SuiteGlobs:
    """Read one suite file's globs (raises :class:`SuiteError` naming file, line and field)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SuiteError(str(path), None, None, f"cannot read suite file: {error}") from None
    return suite_globs(text, str(path))


def tree_files(root: Path, *, timeout_s: float = 120.0) -> list[str]:
    """The files of a repository tree, sorted, as its suites' globs see them.

    A work tree (``root/.git`` exists) lists what git tracks (``git ls-files``), so build outputs
    and untracked files do not make a glob look alive; a bare repository or git directory lists
    ``HEAD``'s tree (``git ls-tree``); anything else is walked, ``.git`` folders skipped.
    """
    if not root.is_dir():
        raise TreeUnavailable(f"{root} is not a directory")
    if (root / ".git").exists():
        return _git(["git", "-C", str(root), "ls-files", "-z"], root=root, timeout_s=timeout_s)
    if (root / "HEAD").is_file() and (root / "objects").is_dir():
        argv = ["git", f"--git-dir={root}", "ls-tree", "-r", "-z", "--name-only", "HEAD"]
        return _git(argv, root=root, timeout_s=timeout_s)
    return _walk(root)


def _git(argv: list[str], *, root: Path, timeout_s: float) -> list[str]:
    what = " ".join(arg for arg in argv if not arg.startswith("-") and arg != str(root))
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise TreeUnavailable(f"{what} in {root} failed: {error}") from error
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise TreeUnavailable(f"{what} in {root} failed: {lines[0] if lines else 'no message'}")
    return sorted(name for name in done.stdout.decode(errors="surrogateescape").split("\0") if name)


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder).relative_to(root)
        # git lists a link to a folder as one entry and does not follow it; so does this walk.
        linked = [name for name in subfolders if (Path(folder) / name).is_symlink()]
        subfolders[:] = [name for name in subfolders if name != ".git" and name not in linked]
        found.extend((here / name).as_posix() for name in [*names, *linked])
    return sorted(found)
