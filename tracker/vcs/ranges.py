"""First-parent ranges from the stored commits alone: no git, so any transaction may ask."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.models import Commit


def stored_first_parent_range(
    *, session: Session, good: Commit, bad: Commit, limit: int = 512
) -> list[Commit] | None:
    """The range from stored commits alone, when their first parents chain from ``bad`` back to ``good``."""
    chain: list[Commit] = []
    current: Commit | None = bad
    while current is not None and len(chain) < limit:
        if current.id == good.id or (good.sha.startswith(current.sha) or current.sha.startswith(good.sha)):
            return list(reversed(chain))
        chain.append(current)
        if not current.parents:
            return None
        parent_sha = str(current.parents[0])
        current = session.scalar(
            select(Commit).where(Commit.repository_id == bad.repository_id, Commit.sha == parent_sha)
        )
    return None
