"""Input types with the bounds the database can hold, declared in the schema: ids in paths (pages and
API alike: an id outside 1..MAX_ID names nothing), and the base of the web-only request bodies (too
deep refused, NUL characters replaced: :class:`wire.InModel`, the base of the runner protocol's)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from wire import MAX_ID, MAX_INT32, InModel

__all__ = [
    "MAX_ID",
    "MAX_INT32",
    "AlertId",
    "ComparisonId",
    "GroupId",
    "InModel",
    "JobId",
    "NightId",
    "RunId",
]

AlertId = Annotated[int, Path(ge=1, le=MAX_ID, description="an alert's id")]
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="a job's id")]
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="a run's id")]
ComparisonId = Annotated[int, Path(ge=1, le=MAX_ID, description="a comparison's id")]
GroupId = Annotated[int, Path(ge=1, le=MAX_ID, description="an alert group's id")]
NightId = Annotated[int, Path(ge=1, le=MAX_ID, description="a nightly run's id")]
