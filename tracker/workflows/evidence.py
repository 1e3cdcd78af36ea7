"""Evidence for a culprit: once bisection names an alert's culprit, or a PR comparison's result is a
regression, queue one run of each side with the compile logs and a profiler on (not for an
``output`` alert: a changed picture is shown by its outputs, not by a profile).

The two sides are the culprit and the commit just before it on the bisected range (the alert's
last good commit when the culprit is the first after it), or a comparison's base and head. Each
evidence job (:attr:`JobReason.EVIDENCE`) carries an :class:`~tracker.models.EvidenceJob` row that
says what it is evidence for; the runner profiles such a job and ingest marks its run excluded (it
measures nothing). An evidence row lives thus: queued here (no run); linked to its run by the
upload (:func:`link_evidence_run`: pending, nothing read); read after the answer, or given up, by
:mod:`tracker.workflows.evidence_reading`. Queuing is idempotent: calling again after every
bisection move is safe.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from tracker.enums import Arm, ComparisonKind, JobReason, Metric, Verdict
from tracker.models import (
    Alert,
    Candidate,
    Case,
    Commit,
    Comparison,
    ComparisonResult,
    EvidenceJob,
    HardwareKind,
    Job,
    Run,
)
from tracker.queue.jobs import enqueue_job
from tracker.vcs.commits import ensure_candidate

REQUESTED_BY = "evidence"


def commit_before_culprit(*, session: Session, alert: Alert) -> Commit | None:
    """The commit the culprit is compared with: its predecessor on the bisected range, else the
    alert's last good commit (``None``: no culprit, or no last good commit)."""
    culprit, good = alert.culprit_commit, alert.last_good_commit
    if culprit is None or good is None:
        return None
    commit_ids = list(alert.evidence.get("bisection_range", []))
    if culprit.id in commit_ids and commit_ids.index(culprit.id) > 0:
        return session.get(Commit, commit_ids[commit_ids.index(culprit.id) - 1]) or good
    return good


def queue_culprit_evidence(*, session: Session, alert: Alert) -> list[Job]:
    """Queue the evidence runs of an alert whose culprit is named (none when it is not, or when
    they were queued before); returns the jobs created."""
    if alert.metric is Metric.OUTPUT:  # the picture changed: a profile says nothing about why
        return []
    culprit, before = alert.culprit_commit, commit_before_culprit(session=session, alert=alert)
    if culprit is None or before is None:
        return []
    created = []
    for side, commit in ((Arm.BASE, before), (Arm.HEAD, culprit)):
        candidate = ensure_candidate(session=session, base=commit, patches=[])
        job = _queue(
            session, candidate, alert.case, alert.hardware_kind, purpose=f"alert{alert.id}-{side.value}"
        )
        if job is not None:
            session.add(EvidenceJob(job_id=job.id, alert_id=alert.id, side=side))
            created.append(job)
    session.flush()
    return created


def queue_regression_evidence(*, session: Session, comparison: Comparison) -> list[Job]:
    """Queue the evidence runs of each result of a PR comparison whose verdict is a regression."""
    if comparison.kind is not ComparisonKind.PR:
        return []
    created = []
    for result in comparison.results:
        if result.verdict is Verdict.REGRESSION:
            created += _result_jobs(session, comparison, result)
    session.flush()
    return created


def link_evidence_run(*, session: Session, job: Job, run: Run, now: dt.datetime) -> EvidenceJob | None:
    """Link the stored run ``run`` to the evidence row of ``job`` (``None``: not an evidence job).

    Nothing is read here (a trace of several MB is no work for the upload's write transaction): the
    row is pending until :func:`tracker.workflows.evidence_reading.summarize_pending` reads it.
    """
    link = session.get(EvidenceJob, job.id)
    if link is None:
        return None
    link.run_id = run.id
    link.recorded_at = now
    link.summarized_at = None
    session.flush()
    return link


def _result_jobs(session: Session, comparison: Comparison, result: ComparisonResult) -> list[Job]:
    created = []
    for side, candidate in ((Arm.BASE, comparison.base_candidate), (Arm.HEAD, comparison.head_candidate)):
        job = _queue(
            session, candidate, result.case, result.hardware_kind, purpose=f"result{result.id}-{side.value}"
        )
        if job is not None:
            session.add(EvidenceJob(job_id=job.id, comparison_result_id=result.id, side=side))
            created.append(job)
    return created


def _queue(
    session: Session, candidate: Candidate, case: Case, hardware: HardwareKind, *, purpose: str
) -> Job | None:
    enqueued = enqueue_job(
        session=session,
        candidate=candidate,
        case=case,
        hardware=hardware,
        reason=JobReason.EVIDENCE,
        purpose=purpose,
        requested_by=REQUESTED_BY,
        max_attempts=2,
    )
    return enqueued.job if enqueued.created else None
