"""The catalog as the JSON API shows it: benchmark cases and hardware kinds, read off the ORM."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracker.models import CaseHardware


class HardwareOut(BaseModel):
    """A hardware kind."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    description: str


class CaseHardwareOut(BaseModel):
    """A hardware kind a case runs on, with the threshold that applies there."""

    name: str
    threshold_pct: float

    @classmethod
    def of(cls, entry: CaseHardware) -> CaseHardwareOut:
        """From the ORM object: the kind's own threshold, or else its case's (``Case.threshold_for``)."""
        name = entry.hardware_kind.name
        return cls(name=name, threshold_pct=entry.case.threshold_for(name))


class CaseOut(BaseModel):
    """The current version of a benchmark case."""

    model_config = ConfigDict(from_attributes=True)

    slug: str
    version: int
    suite: str
    title: str
    model: str
    family: str = Field(validation_alias="model_family")
    task: str
    workload: str
    mode: str
    num_gpus: int
    requests: int
    threshold_pct: float
    hardware: list[CaseHardwareOut]
    params: dict[str, Any]
    flags: dict[str, Any]

    @field_validator("hardware", mode="before")
    @classmethod
    def _with_thresholds(cls, hardware: Any) -> Any:
        """A case's hardware rows, each with the threshold that applies on it."""
        return [CaseHardwareOut.of(entry) if isinstance(entry, CaseHardware) else entry for entry in hardware]
