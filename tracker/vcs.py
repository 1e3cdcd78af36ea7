"""Commits and candidates as the tracker stores them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.errors import InvalidInput
from tracker.models import Candidate, CandidatePatch, Commit, PatchKind, Repository, utcnow
from tracker.schemas import CommitIn

_PULL_REF = re.compile(r"^(?:refs/pull/(\d+)/head|#(\d+))$")


def upsert_commit(*, session: Session, repository: Repository, commit: CommitIn) -> Commit:
    """The stored commit for ``commit.sha`` (abbreviations match), filled in with what is new."""
    stored = _find_commit(session=session, repository=repository, sha=commit.sha)
    if stored is None:
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
            # Another upload of the same new commit inserted it between our look-up and insert.
            raced = _find_commit(session=session, repository=repository, sha=commit.sha)
            if raced is None:
                raise
            return upsert_commit(session=session, repository=repository, commit=commit)
        return stored
    if len(commit.sha) > len(stored.sha):
        stored.sha = commit.sha  # learn the full sha from a later, more precise upload
    if commit.committed_at is not None and (
        stored.committed_at_estimated or stored.committed_at != commit.committed_at
    ):
        stored.committed_at = commit.committed_at
        stored.committed_at_estimated = False
    for attribute in ("title", "author_name", "author_email", "branch"):
        value = getattr(commit, attribute)
        if value:
            setattr(stored, attribute, value)
    if commit.parents:
        stored.parents = list(commit.parents)
    return stored


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


def _normalise_ref(ref: str) -> str:
    pull = _PULL_REF.match(ref)
    if pull:
        return f"refs/pull/{pull.group(1) or pull.group(2)}/head"
    return ref.lower()


def _patch(position: int, ref: str) -> CandidatePatch:
    pull = _PULL_REF.match(ref)
    if pull:
        return CandidatePatch(position=position, kind=PatchKind.PULL, ref=ref, pr_number=int(pull.group(1)))
    return CandidatePatch(position=position, kind=PatchKind.COMMIT, ref=ref)


def _short(ref: str) -> str:
    pull = _PULL_REF.match(ref)
    return f"#{pull.group(1)}" if pull else ref[:7]
