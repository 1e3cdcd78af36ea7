"""Confirmation of suspect alerts: re-run the suspect, then confirm it, refute it or give up.

A suspect (one run at a new level) measured by perftrack's runners is re-run first: ``confirm``
jobs measure the first bad commit and the last good one again. Once they have ended, a re-run
that falls back refutes the alert (status ``invalid``) and the outlier run is excluded from
detection with its runner named; without any re-run the alert is left open unconfirmed
(``confirmation = "not_possible"``). A re-run that holds is seen by detection itself
(:mod:`tracker.alerts`).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.alert_log import ACTOR, record
from tracker.jobs import enqueue_job
from tracker.models import (
    Alert,
    AlertStatus,
    Candidate,
    Case,
    HardwareKind,
    Job,
    JobReason,
    JobState,
    Run,
    Runner,
    RunStatus,
)
from tracker.vcs import ensure_candidate

_ENDED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class SeriesScope(Protocol):
    """The series and the moment a confirmation acts on (the alerts' evaluation context)."""

    session: Session
    case: Case
    hardware: HardwareKind
    now: dt.datetime


def enqueue_confirmation(context: SeriesScope, alert: Alert) -> None:
    """Queue ``confirm`` jobs re-running the alert's first bad and last good commits."""
    for commit in (alert.first_bad_commit, alert.last_good_commit):
        if commit is None:
            continue
        enqueue_job(
            session=context.session,
            candidate=ensure_candidate(session=context.session, base=commit, patches=[]),
            case=context.case,
            hardware=context.hardware,
            reason=JobReason.CONFIRM,
            purpose=f"alert{alert.id}",
            requested_by=ACTOR,
            alert_id=alert.id,
        )


def _confirm_jobs(context: SeriesScope, alert: Alert) -> list[Job]:
    return list(
        context.session.scalars(
            select(Job).where(Job.alert_id == alert.id, Job.reason == JobReason.CONFIRM).order_by(Job.id)
        )
    )


def settle_after_reruns(context: SeriesScope, alert: Alert) -> bool:
    """A pending alert detection still sees as a suspect: refuted (or given up) once its re-runs are in."""
    jobs = _confirm_jobs(context, alert)
    if jobs and all(job.state in _ENDED for job in jobs):
        return _refute_or_give_up(context, alert)
    return False


def settle_vanished(context: SeriesScope, alert: Alert) -> bool:
    """A pending alert whose change detection no longer sees: refuted once its re-runs are in."""
    jobs = _confirm_jobs(context, alert)
    if jobs and not all(job.state in _ENDED for job in jobs):
        return False
    return _refute_or_give_up(context, alert)


def _refute_or_give_up(context: SeriesScope, alert: Alert) -> bool:
    jobs = _confirm_jobs(context, alert)
    confirm_job_ids = {job.id for job in jobs}
    suspect_runs = context.session.scalars(
        select(Run)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(
            Run.case_id == context.case.id,
            Run.hardware_kind_id == context.hardware.id,
            Run.commit_id == alert.first_bad_commit_id,
            Run.status == RunStatus.OK,
            Candidate.patch_count == 0,
        )
        .order_by(Run.id)
    ).all()
    reruns = [run for run in suspect_runs if run.job_id in confirm_job_ids]
    if not reruns:
        failures = "; ".join(f"job {job.id}: {job.failure_reason or job.state.value}" for job in jobs)
        alert.confirmation = "not_possible"
        record(
            alert,
            reason=f"could not re-run the first bad commit ({failures or 'no confirm job'}); "
            "left open unconfirmed",
            now=context.now,
        )
        return True
    before = alert.before_value
    rerun_values = [run.denoise_step_ms for run in reruns if run.denoise_step_ms]
    rerun_level = sorted(rerun_values)[len(rerun_values) // 2]
    step = math.log(alert.after_value / before) if alert.after_value != before else 0.0
    outliers = [
        run
        for run in suspect_runs
        if run.job_id not in confirm_job_ids
        and run.denoise_step_ms
        and step != 0
        and math.log(run.denoise_step_ms / before) / step >= 0.5
    ]
    noted = []
    for run in outliers:
        runner = run.runner_id
        run.excluded_reason = (
            f"outlier: a re-run gave {rerun_level:.2f} ms where this run gave {run.denoise_step_ms:.2f} ms "
            f"(alert {alert.id})"
        )
        noted.append({"run_id": run.id, "runner_id": runner, "value": run.denoise_step_ms})
    names = _runner_names(context.session, [entry["runner_id"] for entry in noted])
    alert.evidence = {**alert.evidence, "outlier_runs": noted, "rerun_ms": rerun_level}
    alert.confirmation = "refuted"
    alert.confirmed = False
    who = ", ".join(
        f"run {entry['run_id']} on {names.get(entry['runner_id'], 'an import')}" for entry in noted
    )
    record(
        alert,
        reason=f"did not hold up: the re-run of {alert.first_bad_commit.short_sha} gave {rerun_level:.2f} ms "
        f"against {before:.2f} ms before; outlier {who or 'not identified'} left out of detection",
        now=context.now,
        to_status=AlertStatus.INVALID,
    )
    return True


def _runner_names(session: Session, runner_ids: list[object]) -> dict[object, str]:
    ids = [runner_id for runner_id in runner_ids if isinstance(runner_id, int)]
    if not ids:
        return {}
    return {runner.id: runner.name for runner in session.scalars(select(Runner).where(Runner.id.in_(ids)))}
