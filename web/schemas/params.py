"""Input types with the bounds the database can hold, declared in the schema: ids in paths (pages and
API alike: an id outside 1..MAX_ID names nothing), and the base of the web-only request bodies (too
deep refused, NUL characters replaced, as ``tracker.schemas`` does)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, model_validator

from tracker.schemas import MAX_ID, MAX_INT32, reject_deep_json

__all__ = ["MAX_ID", "MAX_INT32", "AlertId", "ComparisonId", "InModel", "JobId", "RunId"]

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
        reject_deep_json(data)  # before the recursive scrub walks it
        return _without_nul(data)
