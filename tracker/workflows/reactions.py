"""What follows a stored run or a job that ended without one.

One place dispatches, so ingest and the job queue stay ignorant of comparisons and alerts:
a flagged run is measured again (:mod:`tracker.workflows.reruns`);
a comparison's arm advances its comparison; a run on a series (nightly, confirm, bisect, manual,
import) feeds change detection, and a bisect job's result moves its bisection on. A culprit named,
or a PR result found a regression, queues the evidence runs (:mod:`tracker.workflows.evidence`);
an evidence run is linked to its evidence row, read for the diagnosis after the answer
(:mod:`tracker.workflows.evidence_reading`), and feeds nothing else.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy.orm import Session

from tracker.comparisons.progress import comparison_job_ended, record_comparison_job
from tracker.detection import bisection
from tracker.detection.alerts import evaluate_series, load_series_runs
from tracker.detection.confirmation import settle_confirmation
from tracker.detection.group_notices import tell_group
from tracker.detection.output_alerts import evaluate_outputs
from tracker.enums import ComparisonKind, ComparisonState, JobReason
from tracker.github import status as github_status
from tracker.github.culprits import tell_culprit
from tracker.models import Alert, Candidate, Case, Comparison, HardwareKind, Job, Run
from tracker.notifications.events import tell_comparison
from tracker.observability.metrics import timed_detection
from tracker.series import pending
from tracker.settings import CulpritTelling
from tracker.workflows.evidence import link_evidence_run, queue_culprit_evidence, queue_regression_evidence
from tracker.workflows.group_news import diagnosis_notes
from tracker.workflows.reruns import DEFAULT_BUDGET, requeue_if_flagged

# Jobs whose runs are points of the nightly series (plain commits of the branch).
SERIES_REASONS = (JobReason.NIGHTLY, JobReason.CONFIRM, JobReason.BISECT, JobReason.MANUAL)


def after_job_run(
    *,
    session: Session,
    job: Job,
    run: Run,
    now: dt.datetime,
    defer: bool = False,
    rerun_budget: dt.timedelta = DEFAULT_BUDGET,
    telling: CulpritTelling | None = None,
) -> None:
    """React to the run a job attempt stored (its job is already done or failed).

    ``defer``: only mark the series for the scheduler's next evaluation (``tracker.series.pending``).
    ``rerun_budget``: how long after its first flagged try a flagged run's job is measured again.
    ``telling``: whether this server comments on a culprit's pull request (None: it does not).
    """
    if job.reason is JobReason.EVIDENCE:  # profiled: read for the diagnosis, never re-run or a point
        link_evidence_run(session=session, job=job, run=run, now=now)  # read after the answer
        return
    requeue_if_flagged(session=session, job=job, run=run, now=now, budget=rerun_budget)
    if job.comparison_id is not None:
        comparison = record_comparison_job(session=session, job=job, run=run, now=now)
        _comparison_moved(session=session, comparison=comparison, now=now, telling=telling)
        return
    if job.reason not in SERIES_REASONS:
        return
    if job.reason is JobReason.BISECT:
        bisection.record_job(session=session, job=job, run=run, now=now)
        _culprit_named(session, job.alert_id, now, telling)
    if _is_plain(session, job.candidate_id):
        _evaluate(
            session=session, case=job.case, hardware=job.hardware_kind, now=now, defer=defer, telling=telling
        )


def after_job_ended(
    *, session: Session, job: Job, now: dt.datetime, telling: CulpritTelling | None = None
) -> None:
    """React to a job that ended without a run: failed after its last lease expired, or cancelled."""
    if job.comparison_id is not None:
        comparison = comparison_job_ended(session=session, job=job, now=now)
        _comparison_moved(session=session, comparison=comparison, now=now, telling=telling)
        return
    if job.reason is JobReason.BISECT:
        bisection.record_job(session=session, job=job, run=None, now=now)
        _culprit_named(session, job.alert_id, now, telling)


_VERDICT_STATES = frozenset({ComparisonState.DONE, ComparisonState.FAILED})  # a PR's told verdict


def _comparison_moved(
    *, session: Session, comparison: Comparison, now: dt.datetime, telling: CulpritTelling | None
) -> None:
    """A comparison advanced: a PR's comment follows it; a finished confirmation settles its
    alert (a confirmed one is bisected); a finished bisection step moves its bisection on."""
    if comparison.kind is ComparisonKind.CONFIRMATION:
        confirmed = settle_confirmation(session=session, comparison=comparison, now=now)
        if confirmed is not None:
            bisection.start_bisection(session=session, alert=confirmed, now=now)
            _culprit_found(session, confirmed, now, telling)
    elif comparison.kind is ComparisonKind.BISECT:
        bisection.record_paired_step(session=session, comparison=comparison, now=now)
        _culprit_named(session, comparison.alert_id, now, telling)
    else:
        github_status.comparison_changed(session=session, comparison=comparison)
        queue_regression_evidence(session=session, comparison=comparison)
        if comparison.kind is ComparisonKind.PR and comparison.state in _VERDICT_STATES:
            tell_comparison(session=session, comparison=comparison)


def after_import(
    *,
    session: Session,
    run: Run,
    now: dt.datetime,
    defer: bool = False,
    telling: CulpritTelling | None = None,
) -> None:
    """React to an imported run: it is a series point when it measured a plain commit."""
    if _is_plain(session, run.candidate_id):
        _evaluate(
            session=session, case=run.case, hardware=run.hardware_kind, now=now, defer=defer, telling=telling
        )


def after_batch_import(*, session: Session, series: Iterable[tuple[int, int]], now: dt.datetime) -> None:
    """React to a batch of imported runs of plain commits: mark each ``(case_id, hardware_kind_id)``
    series once for the scheduler's pending pass (``pending-detection``, every few seconds), which
    evaluates it once however many of the batch's runs it got, whatever ``detection_deferred`` says."""
    pending.mark_all_pending(session=session, series=series, now=now)


def evaluate_pending_series(
    *, session: Session, now: dt.datetime, telling: CulpritTelling | None = None
) -> list[Alert]:
    """Evaluate the series uploads marked under deferred detection (the scheduler calls this)."""
    return pending.evaluate_pending(
        session=session,
        evaluate=lambda case, kind: _evaluate(
            session=session, case=case, hardware=kind, now=now, telling=telling
        ),
    )


@timed_detection("series")  # the load, speed and output detection of one series
def evaluate_and_bisect(
    *,
    session: Session,
    case: Case,
    hardware: HardwareKind,
    now: dt.datetime,
    telling: CulpritTelling | None = None,
) -> list[Alert]:
    """Evaluate one series now; an alert that opens as an established change starts its bisection.

    The one place where detection hands over to bisection: uploads, the deferred evaluation and the
    sweep all come here. (A suspect is bisected once its paired rounds confirm it, in
    :func:`_comparison_moved`.)
    """

    def bisect(alert: Alert) -> None:
        bisection.start_bisection(session=session, alert=alert, now=now)
        _culprit_found(session, alert, now, telling)

    # One load of the series serves both: its times and its outputs are read from the same runs.
    commits = load_series_runs(session=session, case=case, hardware=hardware)
    # Outputs first: an output change needs no confirmation (a seeded run is deterministic) and is
    # bisected at once, and speed detection then counts it as a mechanism that moved (a smaller
    # shift at that commit is a suspect for paired rounds: tracker.series.state.output_changes).
    touched = evaluate_outputs(
        session=session, case=case, hardware=hardware, now=now, on_created=bisect, commits=commits
    )
    touched += evaluate_series(
        session=session, case=case, hardware=hardware, now=now, on_confirmed=bisect, commits=commits
    )
    return touched


def _culprit_named(
    session: Session, alert_id: int | None, now: dt.datetime, telling: CulpritTelling | None
) -> None:
    """Queue the evidence runs of the alert, and tell its group's news, if its bisection has just
    named the culprit (each group's culprit is told once)."""
    alert = session.get(Alert, alert_id) if alert_id is not None else None
    if alert is not None:
        _culprit_found(session, alert, now, telling)


def _culprit_found(session: Session, alert: Alert, now: dt.datetime, telling: CulpritTelling | None) -> None:
    """An alert confirmed, or its culprit named: its evidence runs, its group's news to the
    subscriptions (confirmed, culprit named: once per group), and the pull request its group's
    culprit came from told (once per group, edited as the group grows)."""
    queue_culprit_evidence(session=session, alert=alert)
    tell_group(session=session, group=alert.group, now=now, describe=diagnosis_notes(session))
    tell_culprit(session=session, group=alert.group, telling=telling, now=now)


def _is_plain(session: Session, candidate_id: int) -> bool:
    candidate = session.get(Candidate, candidate_id)
    return candidate is not None and candidate.is_plain


def _evaluate(
    *,
    session: Session,
    case: Case,
    hardware: HardwareKind,
    now: dt.datetime,
    defer: bool = False,
    telling: CulpritTelling | None = None,
) -> list[Alert]:
    if defer:
        pending.mark_pending(session=session, case_id=case.id, hardware_kind_id=hardware.id, now=now)
        return []
    return evaluate_and_bisect(session=session, case=case, hardware=hardware, now=now, telling=telling)
