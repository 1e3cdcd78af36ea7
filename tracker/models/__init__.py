"""SQLAlchemy models for the whole perftrack domain (see DESIGN.md, "Domain")."""

from tracker.models.access import ApiToken, Runner
from tracker.models.automation import GithubDelivery, GithubOutbox, NightlyRun, apscheduler_jobs
from tracker.models.base import Base, utcnow
from tracker.models.catalog import CarriedPatch, Case, CaseHardware, HardwareKind, Repository
from tracker.models.detection import (
    Alert,
    AlertEvent,
    BisectionStep,
    Calibration,
    Comparison,
    ComparisonResult,
    PendingEvaluation,
)
from tracker.models.enums import (
    AlertConfirmation,
    AlertStatus,
    Arm,
    ComparisonKind,
    ComparisonState,
    Direction,
    JobReason,
    JobState,
    Metric,
    PatchKind,
    RunMode,
    RunSource,
    RunStatus,
    TokenRole,
    Verdict,
    Workload,
)
from tracker.models.jobs import Job
from tracker.models.runs import Run, RunArtifacts, RunStage, SeriesCount
from tracker.models.vcs import Candidate, CandidatePatch, Commit

__all__ = [
    "Alert",
    "AlertConfirmation",
    "AlertEvent",
    "AlertStatus",
    "ApiToken",
    "Arm",
    "Base",
    "BisectionStep",
    "Calibration",
    "Candidate",
    "CandidatePatch",
    "CarriedPatch",
    "Case",
    "CaseHardware",
    "Commit",
    "Comparison",
    "ComparisonKind",
    "ComparisonResult",
    "ComparisonState",
    "Direction",
    "GithubDelivery",
    "GithubOutbox",
    "HardwareKind",
    "Job",
    "JobReason",
    "JobState",
    "Metric",
    "NightlyRun",
    "PatchKind",
    "PendingEvaluation",
    "Repository",
    "Run",
    "RunArtifacts",
    "RunMode",
    "RunSource",
    "RunStage",
    "RunStatus",
    "Runner",
    "SeriesCount",
    "TokenRole",
    "Verdict",
    "Workload",
    "apscheduler_jobs",
    "utcnow",
]
