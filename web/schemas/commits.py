"""A commit as the JSON API shows it inside series points, runs and alerts."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field


class CommitOut(BaseModel):
    """A commit as series and runs show it."""

    # Read off a :class:`tracker.models.Commit`; also from a mapping that uses the field names.
    model_config = ConfigDict(from_attributes=True, validate_by_name=True)

    sha: str
    title: str
    author: str = Field(validation_alias="author_name")
    committed_at: dt.datetime
    committed_at_estimated: bool
