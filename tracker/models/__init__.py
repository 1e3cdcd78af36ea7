"""SQLAlchemy models for the whole perftrack domain (see DESIGN.md, "Domain").

May import: db and the leaves.
"""

from tracker.enums import (
    AlertConfirmation,
    AlertStatus,
    Arm,
    AttemptOutcome,
    BisectionOutcome,
    BisectionState,
    ComparisonKind,
    ComparisonState,
    DeliveryState,
    Direction,
    JobReason,
    JobState,
    Metric,
    OutboxKind,
    OutputStatus,
    PatchKind,
    RunMode,
    RunSource,
    RunStatus,
    TokenRole,
    Verdict,
    Workload,
)
from tracker.models.access import ApiToken, DashboardSession, Runner, SignInThrottle
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
from tracker.models.evidence import EvidenceJob, RunFile
from tracker.models.jobs import Job, JobAttempt
from tracker.models.outputs import RunOutput, RunOutputFrame
from tracker.models.runs import Run, RunArtifacts, RunStage, SeriesCount, SeriesLatest
from tracker.models.vcs import Candidate, CandidatePatch, Commit

__all__ = [
    "Alert",
    "AlertConfirmation",
    "AlertEvent",
    "AlertStatus",
    "ApiToken",
    "Arm",
    "AttemptOutcome",
    "Base",
    "BisectionOutcome",
    "BisectionState",
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
    "DashboardSession",
    "DeliveryState",
    "Direction",
    "EvidenceJob",
    "GithubDelivery",
    "GithubOutbox",
    "HardwareKind",
    "Job",
    "JobAttempt",
    "JobReason",
    "JobState",
    "Metric",
    "NightlyRun",
    "OutboxKind",
    "OutputStatus",
    "PatchKind",
    "PendingEvaluation",
    "Repository",
    "Run",
    "RunArtifacts",
    "RunFile",
    "RunMode",
    "RunOutput",
    "RunOutputFrame",
    "RunSource",
    "RunStage",
    "RunStatus",
    "Runner",
    "SeriesCount",
    "SeriesLatest",
    "SignInThrottle",
    "TokenRole",
    "Verdict",
    "Workload",
    "apscheduler_jobs",
    "utcnow",
]
