"""Bisection: find the culprit when the last good and first bad nightly commits are not adjacent.

The range is the first-parent line after the last good commit up to the first bad one. Each
step measures the middle commit still in doubt with a ``bisect`` job; a value nearer the level
after the change than the one before it is bad. A commit that fails to build or run is skipped
and its neighbour is tried, as ``asv find`` does. About log2(n) steps; commits already measured
(nightly runs inside the range) are classified without a job.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.alert_log import ACTOR, record
from tracker.history import GitHistory, HistoryUnavailable, stored_first_parent_range
from tracker.jobs import enqueue_job
from tracker.models import (
    Alert,
    BisectionStep,
    Candidate,
    Commit,
    Job,
    JobReason,
    Run,
    RunStatus,
)
from tracker.vcs import ensure_candidate, upsert_commit

# A commit measured within this share of the midpoint between the two levels is measured twice.
_AMBIGUOUS = 0.2


def start_bisection(*, session: Session, alert: Alert, history: GitHistory | None, now: dt.datetime) -> None:
    """Name the culprit directly when the commits are adjacent, else start bisecting."""
    if alert.bisection_state is not None:
        return
    good, bad = alert.last_good_commit, alert.first_bad_commit
    if good is None:
        _unavailable(alert, "no last good commit to bisect from", now)
        return
    commits = stored_first_parent_range(session=session, good=good, bad=bad)
    if commits is None:
        if history is None:
            _unavailable(alert, "the tracker has no git history configured for bisection", now)
            return
        try:
            listed = history.first_parent_range(bad.repository, good.sha, bad.sha)
        except HistoryUnavailable as error:
            _unavailable(alert, f"cannot list the commits between: {error}", now)
            return
        commits = [
            upsert_commit(session=session, repository=bad.repository, commit=entry) for entry in listed
        ]
    if len(commits) <= 1:
        alert.bisection_state = "not_needed"
        alert.culprit_commit = bad
        _event(
            alert, f"{good.short_sha} and {bad.short_sha} are adjacent: the culprit is {_describe(bad)}", now
        )
        return
    alert.bisection_state = "running"
    alert.evidence = {**alert.evidence, "bisection_range": [commit.id for commit in commits]}
    _event(
        alert,
        f"bisecting {len(commits) - 1} commits between {good.short_sha} and {bad.short_sha} "
        f"(about {math.ceil(math.log2(len(commits)))} steps)",
        now,
    )
    session.flush()
    advance(session=session, alert=alert, now=now)


def advance(*, session: Session, alert: Alert, now: dt.datetime) -> None:
    """Take the next bisection step: classify measured commits, queue the next one, or conclude."""
    if alert.bisection_state != "running":
        return
    commit_ids: list[int] = list(alert.evidence.get("bisection_range", []))
    commits = {
        commit.id: commit for commit in session.scalars(select(Commit).where(Commit.id.in_(commit_ids)))
    }
    while True:
        outcomes = {step.commit_id: step for step in alert.bisection_steps}
        if any(step.outcome == "pending" for step in outcomes.values()):
            return
        low, high = -1, len(commit_ids) - 1  # last known good, first known bad (the nightly first bad)
        for index, commit_id in enumerate(commit_ids):
            step = outcomes.get(commit_id)
            if step is not None and step.outcome == "good":
                low = max(low, index)
        for index, commit_id in enumerate(commit_ids):
            step = outcomes.get(commit_id)
            if index > low and step is not None and step.outcome == "bad":
                high = min(high, index)
        doubtful = [
            index
            for index in range(low + 1, high)
            if outcomes.get(commit_ids[index]) is None or outcomes[commit_ids[index]].outcome != "skipped"
        ]
        if high - low == 1 or not doubtful:
            _conclude(alert, [commits[commit_ids[index]] for index in range(low + 1, high + 1)], now)
            return
        middle = doubtful[len(doubtful) // 2]
        commit = commits[commit_ids[middle]]
        values = _measured(session, alert, commit)
        step = BisectionStep(
            position=len(alert.bisection_steps), commit=commit, outcome="pending", created_at=now
        )
        alert.bisection_steps.append(step)
        if values and _classify(alert, step, values, note="measured already"):
            continue
        _measure(session, alert, step, again=bool(values))
        return


def record_job(*, session: Session, job: Job, run: Run | None, now: dt.datetime) -> None:
    """A bisect job ended: classify its commit (or skip it) and take the next step."""
    alert = session.get(Alert, job.alert_id) if job.alert_id is not None else None
    if alert is None:
        return
    step = next((step for step in alert.bisection_steps if step.job_id == job.id), None)
    if step is None or step.outcome != "pending":
        return
    if run is not None and run.status is RunStatus.OK and run.denoise_step_ms:
        values = _measured(session, alert, step.commit)
        if not _classify(alert, step, values, note=f"run {run.id}"):
            _measure(session, alert, step, again=True)
            session.flush()
            return
    else:
        reason = (run.failure_reason if run is not None else None) or job.failure_reason or job.state.value
        step.outcome = "skipped"
        step.note = f"could not measure: {reason}"[:2000]
    session.flush()
    advance(session=session, alert=alert, now=now)


def _measured(session: Session, alert: Alert, commit: Commit) -> list[float]:
    values = session.scalars(
        select(Run.denoise_step_ms)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(
            Run.case_id == alert.case_id,
            Run.hardware_kind_id == alert.hardware_kind_id,
            Run.commit_id == commit.id,
            Run.status == RunStatus.OK,
            Run.excluded_reason.is_(None),
            Candidate.patch_count == 0,
        )
    ).all()
    return [float(value) for value in values if value]


def _classify(alert: Alert, step: BisectionStep, values: list[float], *, note: str) -> bool:
    """Bad when the commit's level is at least halfway (in log terms) from before to after.

    A level in the middle third is ambiguous: with a single run, ``False`` asks for another
    measurement; from two runs on, the median decides and the note says it was close.
    """
    value = statistics.median(values)
    span = math.log(alert.after_value / alert.before_value)
    share = math.log(value / alert.before_value) / span if span else 0.0
    close = abs(share - 0.5) < _AMBIGUOUS
    if close and len(values) < 2:
        step.note = f"{note}: {value:.2f} ms is {share * 100:.0f} % of the way: measuring it again"
        return False
    step.value = value
    step.outcome = "bad" if share >= 0.5 else "good"
    runs = f"median of {len(values)} runs" if len(values) > 1 else "one run"
    step.note = (
        f"{note}: {value:.2f} ms ({runs}), {share * 100:.0f} % of the way from "
        f"{alert.before_value:.2f} to {alert.after_value:.2f} ms" + (" (close call)" if close else "")
    )
    return True


def _measure(session: Session, alert: Alert, step: BisectionStep, *, again: bool) -> None:
    """Queue a bisect job for the step's commit (a second one when the first was ambiguous)."""
    job = enqueue_job(
        session=session,
        candidate=ensure_candidate(session=session, base=step.commit, patches=[]),
        case=alert.case,
        hardware=alert.hardware_kind,
        reason=JobReason.BISECT,
        purpose=f"alert{alert.id}" + (f":again{step.commit.id}" if again else ""),
        requested_by=ACTOR,
        alert_id=alert.id,
    ).job
    step.job_id = job.id
    session.flush()


def _conclude(alert: Alert, suspects: list[Commit], now: dt.datetime) -> None:
    steps = sum(1 for step in alert.bisection_steps if step.job_id is not None)
    if len(suspects) == 1:
        alert.bisection_state = "found"
        alert.culprit_commit = suspects[0]
        _event(
            alert, f"bisection found the culprit {_describe(suspects[0])} after {steps} measured steps", now
        )
        return
    alert.bisection_state = "gave_up"
    listing = ", ".join(commit.short_sha for commit in suspects)
    _event(alert, f"bisection stopped: the commits that could be measured leave {listing} in doubt", now)


def _unavailable(alert: Alert, why: str, now: dt.datetime) -> None:
    alert.bisection_state = "unavailable"
    alert.evidence = {**alert.evidence, "bisection_unavailable": why}
    _event(alert, f"no bisection: {why}", now)


def _describe(commit: Commit) -> str:
    author = f" by {commit.author_name}" if commit.author_name else ""
    title = f" {commit.title!r}" if commit.title else ""
    return f"{commit.short_sha}{title}{author}"


def _event(alert: Alert, reason: str, now: dt.datetime) -> None:
    record(alert, reason=reason, now=now)


def bisection_view(alert: Alert) -> list[dict[str, Any]]:
    """The steps of an alert's bisection, for the API and pages."""
    return [
        {
            "position": step.position,
            "commit_sha": step.commit.sha,
            "commit_title": step.commit.title,
            "value_ms": step.value,
            "outcome": step.outcome,
            "job_id": step.job_id,
            "note": step.note,
        }
        for step in alert.bisection_steps
    ]
