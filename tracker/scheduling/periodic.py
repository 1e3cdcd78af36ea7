"""The interval tasks the scheduler's leader runs besides the nightlies.

Each takes a session and ``now`` and returns what it did, so tests call them directly.
"""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.creation import create_calibration
from tracker.models import (
    Calibration,
    Candidate,
    Case,
    CaseHardware,
    Commit,
    Comparison,
    ComparisonResult,
    HardwareKind,
    NightlyRun,
)

logger = logging.getLogger("perftrack.scheduler")


def due_calibrations(
    *, session: Session, now: dt.datetime, interval: dt.timedelta
) -> list[tuple[Case, HardwareKind]]:
    """Current case × hardware pairs whose newest calibration (or A/A request) is older than ``interval``."""
    cutoff = now - interval
    pairs = session.execute(
        select(Case, HardwareKind)
        .join(CaseHardware, CaseHardware.case_id == Case.id)
        .join(HardwareKind, HardwareKind.id == CaseHardware.hardware_kind_id)
        .where(Case.is_current.is_(True))
        .order_by(Case.slug, HardwareKind.name)
    ).all()
    due: list[tuple[Case, HardwareKind]] = []
    for case, kind in pairs:
        calibrated = session.scalar(
            select(Calibration.created_at)
            .where(Calibration.case_id == case.id, Calibration.hardware_kind_id == kind.id)
            .order_by(Calibration.created_at.desc())
            .limit(1)
        )
        # A calibration still running (or one that failed recently) also counts: no pile-up.
        requested = session.scalar(
            select(Comparison.created_at)
            .join(ComparisonResult, ComparisonResult.comparison_id == Comparison.id)
            .where(
                Comparison.base_candidate_id == Comparison.head_candidate_id,
                ComparisonResult.case_id == case.id,
                ComparisonResult.hardware_kind_id == kind.id,
            )
            .order_by(Comparison.created_at.desc())
            .limit(1)
        )
        newest = max((when for when in (calibrated, requested) if when is not None), default=None)
        if newest is None or newest < cutoff:
            due.append((case, kind))
    return due


def schedule_calibrations(*, session: Session, now: dt.datetime, interval_days: int) -> list[int]:
    """A/A calibrations of every due case × hardware on its repository's latest nightly commit.

    Returns the comparison ids created; ``interval_days`` 0 turns calibrations off.
    """
    if interval_days <= 0:
        return []
    created: list[int] = []
    for case, kind in due_calibrations(session=session, now=now, interval=dt.timedelta(days=interval_days)):
        if case.repository_id is None:
            continue
        sha = session.scalar(
            select(NightlyRun.commit_sha)
            .where(NightlyRun.repository_id == case.repository_id, NightlyRun.commit_sha.is_not(None))
            .order_by(NightlyRun.fired_at.desc(), NightlyRun.id.desc())
            .limit(1)
        )
        if sha is None:
            continue  # no nightly yet: nothing recent to calibrate on
        candidate = session.scalar(
            select(Candidate)
            .join(Commit, Commit.id == Candidate.base_commit_id)
            .where(Commit.repository_id == case.repository_id, Commit.sha == sha, Candidate.is_plain)
        )
        if candidate is None:
            continue
        comparison = create_calibration(
            session=session,
            candidate=candidate,
            cases=[case.slug],
            hardware=[kind.name],
            requested_by="scheduler",
            command="scheduled calibration",
        )
        created.append(comparison.id)
    return created
