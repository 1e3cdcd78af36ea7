"""Commits and candidates as the tracker stores them."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.enums import PatchKind
from tracker.errors import InvalidInput
from tracker.models import Candidate, CandidatePatch, Commit, Repository, utcnow
from wire import CommitIn

logger = logging.getLogger(__name__)

# A pull request's branch (``#N`` is short for it), optionally pinned to one head commit:
# ``refs/pull/N/head@SHA`` builds that commit even after the pull request moved on.
_PULL_REF = re.compile(r"^(?:refs/pull/(\d+)/head|#(\d+))(?:@([0-9a-f]{40}|[0-9a-f]{64}))?$")


@dataclass(frozen=True)
class RecordedCommit:
    """The stored commit for an upload, and what the upload said that was not applied."""

    commit: Commit
    disagreements: tuple[str, ...] = ()


def upsert_commit(
    *, session: Session, repository: Repository, commit: CommitIn, from_repository: bool = False
) -> Commit:
    """The stored commit for ``commit.sha``; see :func:`record_commit` (disagreements only logged)."""
    return record_commit(
        session=session, repository=repository, commit=commit, from_repository=from_repository
    ).commit


def record_commit(
    *, session: Session, repository: Repository, commit: CommitIn, from_repository: bool = False
) -> RecordedCommit:
    """The stored commit for ``commit.sha`` (abbreviations match), created or filled in.

    A known commit is immutable to uploads: a value the tracker has is never changed, since a new
    title, time or parent list would reorder series and mislead bisection. What an upload may still
    fill in is what the tracker does not know yet: an empty title, author or branch, an estimated
    commit time, missing parents (or full parent shas of abbreviated ones). Every other difference is
    logged as a warning and returned in ``disagreements``, not applied.

    The full sha of a commit stored abbreviated is learnt only ``from_repository``: when ``commit``
    was read from the repository itself (its git history, its branch heads). An upload naming a full
    sha that merely starts with a stored abbreviation is stored on that commit with a disagreement,
    and the abbreviation keeps naming one commit: any digits would do to claim it.
    """
    stored = _find_commit(session=session, repository=repository, sha=commit.sha)
    if stored is None:
        inserted = _insert_commit(session=session, repository=repository, commit=commit)
        if inserted is None:
            # Another upload of the same new commit inserted it between our look-up and insert.
            return record_commit(
                session=session, repository=repository, commit=commit, from_repository=from_repository
            )
        return RecordedCommit(inserted)
    disagreements = fill_in_commit(stored, commit, from_repository=from_repository)
    for line in disagreements:
        logger.warning("%s (repository %s)", line, repository.name)
    return RecordedCommit(stored, tuple(disagreements))


def _insert_commit(*, session: Session, repository: Repository, commit: CommitIn) -> Commit | None:
    """Store a commit the tracker does not know; ``None`` when a concurrent upload stored it first."""
    stored = Commit(
        repository=repository,
        sha=commit.sha,
        parents=list(commit.parents),
        title=commit.title,
        author_name=commit.author_name,
        author_email=commit.author_email,
        branch=commit.branch,
        committed_at=commit.committed_at or utcnow(),
        committed_at_estimated=commit.committed_at is None,
    )
    try:
        with session.begin_nested():
            session.add(stored)
            session.flush()
    except IntegrityError:
        raced = _find_commit(session=session, repository=repository, sha=commit.sha)
        if raced is None:
            raise
        return None
    return stored


def fill_in_commit(stored: Commit, commit: CommitIn, *, from_repository: bool = False) -> list[str]:
    """Fill in ``stored`` from ``commit`` (which names it) as :func:`record_commit` says; the
    differences not applied."""
    disagreements: list[str] = []

    def disagree(
        field: str, known: object, uploaded: object, why: str = "a known commit does not change"
    ) -> None:
        disagreements.append(
            f"commit {stored.sha[:12]}: {field} is {_shown(known)} here; the upload's {_shown(uploaded)} "
            f"was not applied ({why})"
        )

    if len(commit.sha) > len(stored.sha):
        if from_repository:
            stored.sha = commit.sha  # the repository completes the abbreviation
        else:
            disagree("sha", stored.sha, commit.sha, "an abbreviation is completed from the repository only")
    if commit.committed_at is not None:
        if stored.committed_at_estimated:
            stored.committed_at = commit.committed_at
            stored.committed_at_estimated = False
        elif stored.committed_at != commit.committed_at:
            disagree("committed_at", stored.committed_at.isoformat(), commit.committed_at.isoformat())
    for attribute in ("title", "author_name", "author_email", "branch"):
        value = getattr(commit, attribute)
        known = getattr(stored, attribute)
        if not value or value == known:
            continue
        if known:
            disagree(attribute, known, value)
        else:
            setattr(stored, attribute, value)
    if commit.parents:
        if not stored.parents or _same_shas(stored.parents, commit.parents):
            stored.parents = _longer_shas(stored.parents, list(commit.parents))
        else:
            disagree("parents", " ".join(stored.parents), " ".join(commit.parents))
    return disagreements


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _same_shas(known: Sequence[str], uploaded: Sequence[str]) -> bool:
    """Whether two parent lists name the same commits (either side may abbreviate)."""
    return len(known) == len(uploaded) and all(
        a.startswith(b) or b.startswith(a) for a, b in zip(known, uploaded, strict=True)
    )


def _longer_shas(known: list[str], uploaded: list[str]) -> list[str]:
    if not known:
        return uploaded
    return [b if len(b) > len(a) else a for a, b in zip(known, uploaded, strict=True)]


def _find_commit(*, session: Session, repository: Repository, sha: str) -> Commit | None:
    exact = session.scalar(select(Commit).where(Commit.repository_id == repository.id, Commit.sha == sha))
    if exact is not None:
        return exact
    # One side may be an abbreviation of the other: 669a9bd vs 669a9bd3c1...
    candidates = session.scalars(
        select(Commit).where(Commit.repository_id == repository.id, Commit.sha.startswith(sha[:7]))
    ).all()
    matches = [c for c in candidates if c.sha.startswith(sha) or sha.startswith(c.sha)]
    if len(matches) > 1:
        listing = ", ".join(sorted(c.sha for c in matches))
        raise InvalidInput("commit.sha", f"{sha!r} is ambiguous: it matches {listing}; give more digits")
    return matches[0] if matches else None


def candidate_key(repository: Repository, base_sha: str, patches: Sequence[str]) -> str:
    """Identity of a candidate: repository, base sha and the patch refs in order."""
    text = "\n".join([repository.name, base_sha, *patches])
    return hashlib.sha256(text.encode()).hexdigest()


def ensure_candidate(*, session: Session, base: Commit, patches: Sequence[str]) -> Candidate:
    """The candidate ``base + patches`` (created once; a plain commit has no patches)."""
    refs = [_normalise_ref(ref) for ref in patches]
    key = candidate_key(base.repository, base.sha, refs)
    candidate = session.scalar(select(Candidate).where(Candidate.key == key))
    if candidate is not None:
        return candidate
    candidate = Candidate(
        key=key,
        repository_id=base.repository_id,
        base_commit=base,
        label=base.sha[:7] + "".join(f" + {_short(ref)}" for ref in refs),
        patch_count=len(refs),
        patches=[_patch(position, ref) for position, ref in enumerate(refs)],
    )
    try:
        with session.begin_nested():
            session.add(candidate)
            session.flush()
    except IntegrityError:
        # The same candidate, created by a concurrent upload or enqueue: use theirs.
        raced = session.scalar(select(Candidate).where(Candidate.key == key))
        if raced is None:
            raise
        return raced
    return candidate


def pinned_pull_ref(number: int, head_sha: str) -> str:
    """The patch ref of pull request ``number`` pinned to the head commit ``head_sha``."""
    return f"refs/pull/{number}/head@{head_sha.lower()}"


def _normalise_ref(ref: str) -> str:
    pull = _PULL_REF.match(ref.lower())
    if pull:
        pin = f"@{pull.group(3)}" if pull.group(3) else ""
        return f"refs/pull/{pull.group(1) or pull.group(2)}/head{pin}"
    return ref.lower()


def _patch(position: int, ref: str) -> CandidatePatch:
    pull = _PULL_REF.match(ref)
    if pull:
        return CandidatePatch(position=position, kind=PatchKind.PULL, ref=ref, pr_number=int(pull.group(1)))
    return CandidatePatch(position=position, kind=PatchKind.COMMIT, ref=ref)


def _short(ref: str) -> str:
    pull = _PULL_REF.match(ref)
    if pull is None:
        return ref[:7]
    return f"#{pull.group(1)}" + (f"@{pull.group(3)[:7]}" if pull.group(3) else "")
