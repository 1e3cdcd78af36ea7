"""Shapes of the JSON API; the runner protocol's (uploads, register, claim, ...) live in :mod:`wire`."""

from web.schemas.calibrations import CalibrationOut, OrderEffectOut
from web.schemas.cases import CaseHardwareOut, CaseOut, HardwareOut
from web.schemas.commits import CommitOut
from web.schemas.comparisons import (
    CalibrationIn,
    CandidateIn,
    CandidateOut,
    ComparisonDetailOut,
    ComparisonIn,
    ComparisonOut,
    ComparisonResultDetailOut,
    ComparisonResultOut,
    RoundOut,
)
from web.schemas.health import Health
from web.schemas.jobs import EnqueueIn, EnqueueOut, JobOut
from web.schemas.runs import PatchOut, RunOut, StageOut
from web.schemas.series import SeriesChartOut, SeriesOut, SeriesPointOut

__all__ = [
    "CalibrationIn",
    "CalibrationOut",
    "CandidateIn",
    "CandidateOut",
    "CaseHardwareOut",
    "CaseOut",
    "CommitOut",
    "ComparisonDetailOut",
    "ComparisonIn",
    "ComparisonOut",
    "ComparisonResultDetailOut",
    "ComparisonResultOut",
    "EnqueueIn",
    "EnqueueOut",
    "HardwareOut",
    "Health",
    "JobOut",
    "OrderEffectOut",
    "PatchOut",
    "RoundOut",
    "RunOut",
    "SeriesChartOut",
    "SeriesOut",
    "SeriesPointOut",
    "StageOut",
]
