"""What an import names, resolved to stored rows: its case, hardware kind, commit and candidate.

A :class:`ImportResolver` looks each distinct value up once, so a batch of 500 results of a few
cases on a few commits costs a few queries rather than 2,000; a single import uses a fresh one. A
refusal (an unknown case, say) is remembered too and raised again for every result that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy.orm import Session

from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.errors import InvalidInput, PerftrackError
from tracker.models import Candidate, Case, Commit, HardwareKind, Repository
from tracker.vcs.commits import RecordedCommit, ensure_candidate, record_commit
from wire import CommitIn, ResultIn

T = TypeVar("T")


@dataclass(frozen=True)
class ResolvedImport:
    """The stored rows an import's run points at, and what its commit said that was not applied."""

    case: Case
    kind: HardwareKind
    commit: Commit
    candidate: Candidate
    warnings: tuple[str, ...] = ()


@dataclass
class ImportResolver:
    """Resolves imports on one session, each case, kind, commit and candidate once."""

    session: Session
    _cases: dict[str, Case | PerftrackError] = field(default_factory=dict)
    _kinds: dict[str, HardwareKind | PerftrackError] = field(default_factory=dict)
    _commits: dict[tuple[int, str], RecordedCommit | PerftrackError] = field(default_factory=dict)
    _candidates: dict[tuple[int, tuple[str, ...]], Candidate] = field(default_factory=dict)

    def resolve(self, result: ResultIn) -> ResolvedImport:
        """The rows ``result`` names (commits and candidates created when new); refusals raised."""
        case = self._case(result.case)
        kind = self._kind(result.hardware)
        if case.repository is None:
            raise InvalidInput("case", f"case {case.slug!r} has no repository in its suite")
        recorded = self._commit(case.repository, result.commit)
        candidate = self._candidate(recorded.commit, tuple(result.patches))
        return ResolvedImport(
            case=case,
            kind=kind,
            commit=recorded.commit,
            candidate=candidate,
            warnings=recorded.disagreements,
        )

    def _case(self, slug: str) -> Case:
        if slug not in self._cases:
            self._cases[slug] = _or_refusal(lambda: get_current_case(session=self.session, slug=slug))
        return _raise_refusal(self._cases[slug])

    def _kind(self, name: str) -> HardwareKind:
        folded = name.lower()  # hardware kinds are matched without regard to case
        if folded not in self._kinds:
            self._kinds[folded] = _or_refusal(lambda: get_hardware_kind(session=self.session, name=name))
        return _raise_refusal(self._kinds[folded])

    def _commit(self, repository: Repository, commit: CommitIn) -> RecordedCommit:
        # The same commit metadata again reads the same: what the first one filled in, it agrees with.
        key = (repository.id, commit.model_dump_json())
        if key not in self._commits:
            self._commits[key] = _or_refusal(
                lambda: record_commit(session=self.session, repository=repository, commit=commit)
            )
        return _raise_refusal(self._commits[key])

    def _candidate(self, base: Commit, patches: tuple[str, ...]) -> Candidate:
        key = (base.id, patches)
        if key not in self._candidates:
            self._candidates[key] = ensure_candidate(session=self.session, base=base, patches=patches)
        return self._candidates[key]


def _or_refusal(look_up: Callable[[], T]) -> T | PerftrackError:
    try:
        return look_up()
    except PerftrackError as error:
        return error


def _raise_refusal(value: T | PerftrackError) -> T:
    if isinstance(value, PerftrackError):
        raise value
    return value
