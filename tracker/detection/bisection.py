"""Bisection: find the culprit when the last good and first bad nightly commits are not adjacent.

The range is the first-parent line after the last good commit up to the first bad one. Each
step measures the middle commit still in doubt with a ``bisect`` job; a value nearer the level
after the change than the one before it is bad — when one run decides it given the series'
noise (:func:`tracker.statistics.bisection.single_run_bisect_call`), against the two levels the alert's
paired confirmation measured. Interference only slows a run down: the fastest run counts, and a
single run at the slower level is measured once more before it is called. When one run cannot
decide, paired rounds of the
commit against the last good one (a comparison of kind ``bisect``) decide where its level lies
(:func:`tracker.statistics.bisection.bisect_call`), so noise cannot send the search the wrong way. A commit
that fails to build or run, or stays too close to call, is skipped and its neighbour is tried,
as ``asv find`` does. About log2(n) steps; commits already measured (nightly runs inside the
range) are classified without a job. An output alert's steps are called by their seeded output
instead (:mod:`tracker.detection.step_judges`): the same walk, one run per step, never paired.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.creation import create_paired_check
from tracker.detection.alert_log import ACTOR, record
from tracker.detection.confirmation import POLICY
from tracker.detection.grouping import place
from tracker.detection.step_judges import Judged, judge_output_step
from tracker.enums import (
    FINISHED_COMPARISON_STATES,
    BisectionOutcome,
    BisectionState,
    ComparisonKind,
    JobReason,
    Metric,
    RunStatus,
    Verdict,
)
from tracker.models import Alert, BisectionStep, Candidate, Commit, Comparison, Job, Run
from tracker.queue.jobs import enqueue_job
from tracker.statistics.bisection import BisectCall, single_run_bisect_call
from tracker.vcs.commits import ensure_candidate, upsert_commit
from tracker.vcs.ranges import stored_first_parent_range
from wire import CommitIn


def start_bisection(
    *, session: Session, alert: Alert, now: dt.datetime, listed: Sequence[CommitIn] | None = None
) -> None:
    """Name the culprit directly when the commits are adjacent, else start bisecting.

    The range comes from the stored commits when their first parents chain from the first bad
    commit back to the last good one; else from ``listed``, the first-parent range that
    :mod:`tracker.workflows.bisections` read from git outside any transaction. With neither, the
    alert waits as ``queued`` for that listing: nothing here runs git.
    """
    if alert.bisection_state not in (None, BisectionState.QUEUED):
        return
    good, bad = alert.last_good_commit, alert.first_bad_commit
    if good is None:
        _unavailable(alert, "no last good commit to bisect from", now)
        return
    commits = stored_first_parent_range(session=session, good=good, bad=bad)
    if commits is None:
        if listed is None:
            if alert.bisection_state is not BisectionState.QUEUED:
                alert.bisection_state = BisectionState.QUEUED
                _event(
                    alert, f"listing the commits between {good.short_sha} and {bad.short_sha} from git", now
                )
            return
        commits = [
            upsert_commit(session=session, repository=bad.repository, commit=entry, from_repository=True)
            for entry in listed  # listed from git: the repository completes abbreviated commits
        ]
    if len(commits) <= 1:
        alert.bisection_state = BisectionState.NOT_NEEDED
        alert.culprit_commit = bad
        _event(
            alert, f"{good.short_sha} and {bad.short_sha} are adjacent: the culprit is {_describe(bad)}", now
        )
        place(session=session, alert=alert, now=now)
        return
    alert.bisection_state = BisectionState.RUNNING
    alert.evidence = {**alert.evidence, "bisection_range": [commit.id for commit in commits]}
    _event(
        alert,
        f"bisecting {len(commits) - 1} commits between {good.short_sha} and {bad.short_sha} "
        f"(about {math.ceil(math.log2(len(commits)))} steps)",
        now,
    )
    session.flush()
    advance(session=session, alert=alert, now=now)


def cannot_list(*, alert: Alert, reason: str, now: dt.datetime) -> None:
    """A queued bisection whose range git could not list (no history configured, git failed)."""
    if alert.bisection_state is BisectionState.QUEUED:
        _unavailable(alert, reason, now)


def advance(*, session: Session, alert: Alert, now: dt.datetime) -> None:
    """Take the next bisection step: classify measured commits, queue the next one, or conclude."""
    if alert.bisection_state is not BisectionState.RUNNING:
        return
    commit_ids: list[int] = list(alert.evidence.get("bisection_range", []))
    commits = {
        commit.id: commit for commit in session.scalars(select(Commit).where(Commit.id.in_(commit_ids)))
    }
    while True:
        outcomes = {step.commit_id: step for step in alert.bisection_steps}
        if any(step.outcome is BisectionOutcome.PENDING for step in outcomes.values()):
            return
        low, high = -1, len(commit_ids) - 1  # last known good, first known bad (the nightly first bad)
        for index, commit_id in enumerate(commit_ids):
            step = outcomes.get(commit_id)
            if step is not None and step.outcome is BisectionOutcome.GOOD:
                low = max(low, index)
        for index, commit_id in enumerate(commit_ids):
            step = outcomes.get(commit_id)
            if index > low and step is not None and step.outcome is BisectionOutcome.BAD:
                high = min(high, index)
        doubtful = [
            index
            for index in range(low + 1, high)
            if outcomes.get(commit_ids[index]) is None
            or outcomes[commit_ids[index]].outcome is not BisectionOutcome.SKIPPED
        ]
        if high - low == 1 or not doubtful:
            _conclude(alert, [commits[commit_ids[index]] for index in range(low + 1, high + 1)], now)
            place(session=session, alert=alert, now=now)
            return
        middle = doubtful[len(doubtful) // 2]
        step = BisectionStep(
            position=len(alert.bisection_steps),
            commit=commits[commit_ids[middle]],
            outcome=BisectionOutcome.PENDING,
            created_at=now,
        )
        alert.bisection_steps.append(step)
        judged = _judge(session, alert, step, run=None, note="measured already")
        if judged.action == "called":
            continue
        if judged.action == "skip":
            step.outcome = BisectionOutcome.SKIPPED
            step.note = f"could not call: {judged.reason}"[:2000]
            continue
        _follow(session, alert, step, judged)
        return


def record_job(*, session: Session, job: Job, run: Run | None, now: dt.datetime) -> None:
    """A bisect job ended: classify its commit (or skip it) and take the next step."""
    alert = session.get(Alert, job.alert_id) if job.alert_id is not None else None
    if alert is None:
        return
    step = next((step for step in alert.bisection_steps if step.job_id == job.id), None)
    if step is None or step.outcome is not BisectionOutcome.PENDING:
        return
    judged = Judged("skip")
    if run is not None and run.status is RunStatus.OK:
        judged = _judge(session, alert, step, run=run, note=f"run {run.id}")
    if judged.action in ("again", "pair"):
        _follow(session, alert, step, judged)
        session.flush()
        return
    if judged.action != "called":
        reason = judged.reason or (
            (run.excluded_reason or run.failure_reason if run is not None else None)
            or job.failure_reason
            or job.state.value
        )
        step.outcome = BisectionOutcome.SKIPPED
        step.note = f"could not measure: {reason}"[:2000]
    session.flush()
    advance(session=session, alert=alert, now=now)


def _judge(session: Session, alert: Alert, step: BisectionStep, *, run: Run | None, note: str) -> Judged:
    """Judge the step's commit the way the alert's metric is judged (``run``: its job's new run)."""
    if alert.metric is Metric.OUTPUT:
        return judge_output_step(session, alert, step, run=run, note=note)
    values = _measured(session, alert, step.commit)
    if run is not None and not run.denoise_step_ms:
        return Judged("skip")
    if not values:
        return Judged("skip") if run is not None else Judged("measure")
    return Judged(_classify(alert, step, values, note=note), runs=len(values))


def _follow(session: Session, alert: Alert, step: BisectionStep, judged: Judged) -> None:
    """Do what a step's judgement asks for: a job for it, a repeat, or paired rounds."""
    if judged.action == "pair":
        _pair(session, alert, step)
    else:
        _measure(session, alert, step, again=judged.runs if judged.action == "again" else 0)


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
            Candidate.is_plain,
        )
    ).all()
    return [float(value) for value in values if value]


def bisection_levels(alert: Alert) -> tuple[float, float]:
    """The good and bad levels a step's commit is called against (ms).

    A confirmed alert's paired arms measured both ends side by side; the nightly values that
    raised the suspect are single runs, one of which may have been interfered with.
    """
    levels = alert.evidence.get("paired_levels_ms")
    if (
        isinstance(levels, list)
        and len(levels) == 2
        and all(isinstance(v, (int, float)) and v > 0 for v in levels)
    ):
        return float(levels[0]), float(levels[1])
    return alert.before_value, alert.after_value


def _classify(
    alert: Alert, step: BisectionStep, values: list[float], *, note: str
) -> Literal["called", "again", "pair"]:
    """Call the step's commit good or bad from its fastest run, when the noise allows it.

    Interference only slows a run down, so the fastest run is the one to trust, and a single run
    that lands at the slower of the two levels may be a run slowed down: it is measured once more
    before the call (``"again"``). ``"pair"`` when the runs lie too close to the midpoint to call
    given the series' noise: paired rounds must decide.
    """
    value = min(values)
    good_level, bad_level = bisection_levels(alert)
    call = single_run_bisect_call(
        value, good_level=good_level, bad_level=bad_level, noise_pct=alert.noise_pct
    )
    runs = f"fastest of {len(values)} runs" if len(values) > 1 else "one run"
    if call.call is BisectCall.UNDECIDED:
        step.note = f"{note}: {value:.2f} ms ({runs}), {call.reason}: paired rounds decide"
        return "pair"
    at_slow_level = (call.call is BisectCall.BAD) == (bad_level > good_level)
    if at_slow_level and len(values) < 2:
        step.note = (
            f"{note}: {value:.2f} ms (one run) lies at the slower level ({call.reason}): "
            "measured once more, since a run slowed down by interference would look the same"
        )
        return "again"
    step.value = value
    step.outcome = BisectionOutcome(call.call.value)
    step.note = f"{note}: {value:.2f} ms ({runs}), from {good_level:.2f} to {bad_level:.2f} ms: {call.reason}"
    return "called"


def _measure(session: Session, alert: Alert, step: BisectionStep, *, again: int = 0) -> None:
    """Queue a bisect job for the step's commit (``again``: the runs it already has, for a repeat)."""
    job = enqueue_job(
        session=session,
        candidate=ensure_candidate(session=session, base=step.commit, patches=[]),
        case=alert.case,
        hardware=alert.hardware_kind,
        reason=JobReason.BISECT,
        purpose=f"alert{alert.id}" if again == 0 else f"alert{alert.id}-again{again}",
        requested_by=ACTOR,
        alert_id=alert.id,
    ).job
    step.job_id = job.id
    session.flush()


def _pair(session: Session, alert: Alert, step: BisectionStep) -> None:
    """Paired rounds of the step's commit against the range's last good commit."""
    good = alert.last_good_commit
    if good is None:
        step.outcome = BisectionOutcome.SKIPPED
        return
    comparison = create_paired_check(
        session=session,
        alert=alert,
        base=ensure_candidate(session=session, base=good, patches=[]),
        head=ensure_candidate(session=session, base=step.commit, patches=[]),
        kind=ComparisonKind.BISECT,
        policy=POLICY,
        command=f"bisect alert {alert.id}: {step.commit.short_sha} against {good.short_sha} in paired rounds",
    )
    step.comparison_id = comparison.id
    session.flush()


def record_paired_step(*, session: Session, comparison: Comparison, now: dt.datetime) -> None:
    """A bisection step's paired rounds finished: call the commit good, bad or skipped; go on."""
    if comparison.kind is not ComparisonKind.BISECT or comparison.state not in FINISHED_COMPARISON_STATES:
        return
    step = session.scalar(select(BisectionStep).where(BisectionStep.comparison_id == comparison.id))
    if step is None or step.outcome is not BisectionOutcome.PENDING:
        return
    result = comparison.results[0] if comparison.results else None
    verdict = result.verdict if result is not None else Verdict.INCONCLUSIVE
    note = result.note if result is not None else "no result"
    if verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
        step.outcome = BisectionOutcome.BAD
    elif verdict is Verdict.NO_CHANGE:
        step.outcome = BisectionOutcome.GOOD
    else:
        step.outcome = BisectionOutcome.SKIPPED
    if result is not None and result.head_value is not None:
        step.value = result.head_value
    step.note = f"{step.note}; {note}"[:2000] if step.note else note[:2000]
    session.flush()
    advance(session=session, alert=step.alert, now=now)


def _conclude(alert: Alert, suspects: list[Commit], now: dt.datetime) -> None:
    steps = sum(1 for step in alert.bisection_steps if step.job_id is not None)
    if len(suspects) == 1:
        alert.bisection_state = BisectionState.FOUND
        alert.culprit_commit = suspects[0]
        _event(
            alert, f"bisection found the culprit {_describe(suspects[0])} after {steps} measured steps", now
        )
        return
    alert.bisection_state = BisectionState.GAVE_UP
    listing = ", ".join(commit.short_sha for commit in suspects)
    _event(alert, f"bisection stopped: the commits that could be measured leave {listing} in doubt", now)


def _unavailable(alert: Alert, why: str, now: dt.datetime) -> None:
    alert.bisection_state = BisectionState.UNAVAILABLE
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
            "comparison_id": step.comparison_id,
            "note": step.note,
        }
        for step in alert.bisection_steps
    ]
