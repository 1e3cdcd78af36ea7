"""The catalog as the JSON API shows it: benchmark cases and hardware kinds, read off the ORM."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tracker.detection.confirmation import max_rounds_for
from tracker.models import Case, CaseHardware, HardwareKind

# What a cap on paired rounds costs: each round runs both commits once.
_CAP = "the most paired rounds a suspect's confirmation may grow to; each round is two runs"


class HardwareOut(BaseModel):
    """A hardware kind."""

    name: str
    description: str

    @classmethod
    def of(cls, kind: HardwareKind) -> HardwareOut:
        """From the ORM object."""
        return cls(name=kind.name, description=kind.description)


class CaseHardwareOut(BaseModel):
    """A hardware kind a case runs on, with the threshold and the confirmation cap that apply there."""

    name: str
    threshold_pct: float
    confirmation_max_rounds: int = Field(description=f"{_CAP} (this kind's, else the case's)")

    @classmethod
    def of(cls, entry: CaseHardware) -> CaseHardwareOut:
        """From the ORM object: the kind's own threshold and cap, or else its case's."""
        name = entry.hardware_kind.name
        return cls(
            name=name,
            threshold_pct=entry.case.threshold_for(name),
            confirmation_max_rounds=max_rounds_for(entry.case, name),
        )


class CaseOut(BaseModel):
    """The current version of a benchmark case."""

    slug: str
    version: int
    suite: str
    title: str
    model: str
    family: str
    task: str
    workload: str
    mode: str
    num_gpus: int
    requests: int
    threshold_pct: float
    confirmation_max_rounds: int = Field(description=f"{_CAP} (the suite's, else the default)")
    hardware: list[CaseHardwareOut]
    params: dict[str, Any]
    flags: dict[str, Any]

    @classmethod
    def of(cls, case: Case) -> CaseOut:
        """From the ORM object, each hardware kind with the threshold and cap that apply on it."""
        return cls(
            slug=case.slug,
            version=case.version,
            suite=case.suite,
            title=case.title,
            model=case.model,
            family=case.model_family,
            task=case.task,
            workload=case.workload.value,
            mode=case.mode.value,
            num_gpus=case.num_gpus,
            requests=case.requests,
            threshold_pct=case.threshold_pct,
            confirmation_max_rounds=max_rounds_for(case),
            hardware=[CaseHardwareOut.of(entry) for entry in case.hardware],
            params=case.params,
            flags=case.flags,
        )
