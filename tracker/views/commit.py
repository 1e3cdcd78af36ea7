"""What the dashboard shows about one commit: every result measured at it, and its alerts.

A commit is looked up by any unambiguous hex prefix (as git accepts), or by a full sha whose
abbreviation is all an import stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import literal, or_, select
from sqlalchemy.orm import Session, selectinload

from tracker.enums import JobReason
from tracker.errors import InvalidInput
from tracker.models import Alert, Commit, Job, Run
from tracker.views.alert_display import AlertDisplay, alert_displays

SHA_PREFIX = re.compile(r"^[0-9a-f]{4,40}$")
MAX_MATCHES = 20


def find_commits(*, session: Session, sha: str) -> list[Commit]:
    """Commits whose sha starts with ``sha`` (4 to 40 hex digits), or that ``sha`` starts with."""
    prefix = sha.strip().lower()
    if not SHA_PREFIX.match(prefix):
        raise InvalidInput("sha", f"{sha!r} is not a commit sha or an abbreviation of 4 to 40 hex digits")
    query = (
        select(Commit)
        .where(or_(Commit.sha.startswith(prefix, autoescape=True), literal(prefix).startswith(Commit.sha)))
        .order_by(Commit.committed_at.desc(), Commit.id)
        .limit(MAX_MATCHES)
    )
    return list(session.scalars(query))


@dataclass(frozen=True)
class CommitResult:
    """One run measured at the commit, with the reason of the job that produced it (None: import)."""

    run: Run
    job_reason: JobReason | None


@dataclass(frozen=True)
class CommitView:
    """A commit's results, plain candidates apart from stacked-patch ones, and its alerts."""

    commit: Commit
    plain: list[CommitResult]
    stacked: list[CommitResult]
    alerts_first_bad: list[Alert]
    alerts_culprit: list[Alert]
    displays: dict[int, AlertDisplay]  # how each alert reads (state, figure), by alert id


def commit_view(*, session: Session, commit: Commit) -> CommitView:
    """Every run whose candidate's base is ``commit`` and the alerts that blame or start at it."""
    runs = list(
        session.scalars(
            select(Run)
            .where(Run.commit_id == commit.id)
            .options(
                selectinload(Run.case),
                selectinload(Run.hardware_kind),
                selectinload(Run.candidate),
            )
        )
    )
    job_ids = {run.job_id for run in runs if run.job_id is not None}
    reasons: dict[int, JobReason] = {}
    if job_ids:
        reasons = {
            int(job_id): reason
            for job_id, reason in session.execute(select(Job.id, Job.reason).where(Job.id.in_(job_ids)))
        }
    runs.sort(key=lambda run: (run.case.slug, run.hardware_kind.name, run.candidate.label, run.id))
    results = [
        CommitResult(run=run, job_reason=reasons.get(run.job_id) if run.job_id is not None else None)
        for run in runs
    ]
    alerts = list(
        session.scalars(
            select(Alert)
            .where(or_(Alert.first_bad_commit_id == commit.id, Alert.culprit_commit_id == commit.id))
            .order_by(Alert.id.desc())
            .options(
                selectinload(Alert.case),
                selectinload(Alert.hardware_kind),
                selectinload(Alert.last_good_commit),
                selectinload(Alert.first_bad_commit),
                selectinload(Alert.culprit_commit),
            )
        )
    )
    return CommitView(
        commit=commit,
        plain=[result for result in results if result.run.candidate.is_plain],
        stacked=[result for result in results if not result.run.candidate.is_plain],
        alerts_first_bad=[alert for alert in alerts if alert.first_bad_commit_id == commit.id],
        alerts_culprit=[alert for alert in alerts if alert.culprit_commit_id == commit.id],
        displays=alert_displays(session=session, alerts=alerts),
    )
