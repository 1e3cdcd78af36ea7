"""The health check's answer."""

from __future__ import annotations

from pydantic import BaseModel


class Health(BaseModel):
    """Answer to ``GET /healthz``."""

    status: str
    database: str
    schema_revision: str | None
    version: str
