"""SQLAlchemy models for the whole perftrack domain (see DESIGN.md, "Domain").

May import: db, settings, errors and enums.
"""

from tracker.models.access import ApiToken, DashboardSession, Runner, SignInThrottle
from tracker.models.automation import GithubDelivery, GithubOutbox, NightlyRun, apscheduler_jobs
from tracker.models.base import Base, utcnow
from tracker.models.catalog import CarriedPatch, Case, CaseHardware, HardwareKind, Repository
from tracker.models.detection import (
    Alert,
    AlertEvent,
    AlertGroup,
    BisectionStep,
    Calibration,
    Comparison,
    ComparisonResult,
    PendingEvaluation,
)
from tracker.models.evidence import EvidenceJob, RunFile
from tracker.models.jobs import Job, JobAttempt
from tracker.models.notifications import NotificationOutbox, NotificationSubscription
from tracker.models.outputs import RunOutput, RunOutputFrame
from tracker.models.runs import Run, RunArtifacts, RunStage, SeriesCount, SeriesLatest
from tracker.models.vcs import Candidate, CandidatePatch, Commit

__all__ = [
    "Alert",
    "AlertEvent",
    "AlertGroup",
    "ApiToken",
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
    "ComparisonResult",
    "DashboardSession",
    "EvidenceJob",
    "GithubDelivery",
    "GithubOutbox",
    "HardwareKind",
    "Job",
    "JobAttempt",
    "NightlyRun",
    "NotificationOutbox",
    "NotificationSubscription",
    "PendingEvaluation",
    "Repository",
    "Run",
    "RunArtifacts",
    "RunFile",
    "RunOutput",
    "RunOutputFrame",
    "RunStage",
    "Runner",
    "SeriesCount",
    "SeriesLatest",
    "SignInThrottle",
    "apscheduler_jobs",
    "utcnow",
]
