"""A commit as the JSON API shows it inside series points, runs and alerts."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel

from tracker.models import Commit


class CommitOut(BaseModel):
    """A commit as series and runs show it."""

    sha: str
    title: str
    author: str
    committed_at: dt.datetime
    committed_at_estimated: bool

    @classmethod
    def of(cls, commit: Commit) -> CommitOut:
        """From the ORM object."""
        return cls(
            sha=commit.sha,
            title=commit.title,
            author=commit.author_name,
            committed_at=commit.committed_at,
            committed_at_estimated=commit.committed_at_estimated,
        )
