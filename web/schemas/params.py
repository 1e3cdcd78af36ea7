"""Input types with the bounds the database can hold, declared in the schema: ids in paths, and the
base of the web-only request bodies (NUL characters replaced, as ``tracker.schemas`` does)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, model_validator

MAX_ID = 2**63 - 1  # ids are 64-bit (BIGINT on PostgreSQL, INTEGER on SQLite)
MAX_INT32 = 2**31 - 1  # plain INTEGER columns on PostgreSQL (PR numbers, counts)

AlertId = Annotated[int, Path(ge=1, le=MAX_ID, description="an alert's id")]
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="a job's id")]
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="a run's id")]
ComparisonId = Annotated[int, Path(ge=1, le=MAX_ID, description="a comparison's id")]


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


class InModel(BaseModel):
    """A request body: U+0000, which PostgreSQL's text and JSONB cannot hold, becomes U+FFFD."""

    @model_validator(mode="before")
    @classmethod
    def _no_nul_characters(cls, data: Any) -> Any:
        return _without_nul(data)
