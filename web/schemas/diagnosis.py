"""The diagnosis of a change, as alerts and comparison results carry it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tracker.diagnosis.facts import Finding


class FindingOut(BaseModel):
    """One line of why a change happened, from what the runs on either side recorded."""

    kind: str = Field(description="compile, gpu_state, warmup, stage or memory")
    summary: str = Field(description='one line, e.g. "graph breaks rose 0 → 3 per run"')
    detail: dict[str, Any] = Field(description="the numbers behind the line")

    @classmethod
    def of(cls, finding: Finding) -> FindingOut:
        """From the tracker's finding."""
        return cls(kind=finding.kind.value, summary=finding.summary, detail=dict(finding.detail))
