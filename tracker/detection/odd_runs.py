"""The nightly runs a suspect rested on, weighed against its paired rounds once they are judged.

Paired rounds measure the suspect's last good and first bad commits several times each, a fresh
process every time. A nightly run far above every clean run of its own commit in those rounds
(:func:`tracker.statistics.paired_rounds.interfered_runs`) was slowed by something else on the
machine: after inconclusive rounds it leaves detection and its commit is measured again
(:func:`remeasure_interfered`). When the rounds refute the suspect, the nightly run that made the
false step leaves detection (:func:`refute`): the interfered one, else the one :func:`odd_side`
picks from the series.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.calibration import judged_against
from tracker.detection.alert_log import record
from tracker.enums import AlertConfirmation, AlertStatus, Arm, JobReason, RunStatus
from tracker.models import Alert, Candidate, Comparison, Job, Run, Runner
from tracker.queue.jobs import PRIORITY, enqueue_job
from tracker.series.latest import refresh_series
from tracker.series.state import load_series_runs
from tracker.statistics.paired_rounds import interfered_runs


def remeasure_interfered(session: Session, alert: Alert, comparison: Comparison, now: dt.datetime) -> None:
    """After inconclusive rounds, a nightly run far above its own commit's paired arm was interfered with.

    The rounds measured both commits several times: a nightly run well above every clean one of
    its commit (:func:`tracker.statistics.paired_rounds.interfered_runs`, the rule that sets rounds aside) was
    slowed by something else on the machine, and it would go on standing in the series as a step
    that no paired rounds can confirm. It leaves detection with the reason shown, and its commit is
    measured once more, ahead of the next nightly, so the series gets that commit's real level.
    """
    excluded = []
    for side in _nightly_against_rounds(session, alert, comparison):
        for run in side.interfered:
            level = sorted(side.reference)[(len(side.reference) - 1) // 2]
            run.excluded_reason = (
                f"interfered with: {run.denoise_step_ms:.3g} ms against {level:.3g} ms for the same commit "
                f"in the paired rounds of alert {alert.id}; measured again"
            )
            job = session.get(Job, run.job_id) if run.job_id is not None else None
            if job is not None:
                enqueue_job(
                    session=session,
                    candidate=job.candidate,
                    case=job.case,
                    hardware=job.hardware_kind,
                    reason=job.reason,
                    priority=PRIORITY[JobReason.CONFIRM],
                    purpose=f"remeasure-interfered-run{run.id}",
                    requested_by=job.requested_by,
                )
            excluded.append(f"run {run.id} of {run.commit.short_sha} ({run.denoise_step_ms:.3g} ms)")
    if excluded:
        # The series' newest points (``series_latest``, the overview's) without the excluded runs.
        refresh_series(session=session, keys=[(alert.case_id, alert.hardware_kind_id)])
        alert.evidence = {**alert.evidence, "interfered_runs": excluded}
        record(
            alert,
            reason=f"{', '.join(excluded)} lay far above the same commit's paired rounds: left out of "
            "detection as interfered with, and measured again; the suspect rested on it",
            now=now,
            to_status=AlertStatus.INVALID,
        )


def refute(session: Session, alert: Alert, note: str, now: dt.datetime, comparison: Comparison) -> None:
    """Refuted: the nightly run that made the false step leaves detection.

    The rounds measured both commits: a nightly run far above its own commit's paired runs was
    slowed down (:func:`tracker.statistics.paired_rounds.interfered_runs`) and is the one to leave out. When
    neither or both stand out that way, :func:`odd_side` decides from the series.
    """
    before, after = alert.before_value, alert.after_value
    good, bad = _nightly_against_rounds(session, alert, comparison)
    good_runs, bad_runs = good.runs, bad.runs
    side = "first_bad"
    by_rounds = None  # exactly one end's nightly run lay far above its paired runs
    if bool(good.interfered) != bool(bad.interfered):
        by_rounds = "last_good" if good.interfered else "first_bad"
    if by_rounds is not None:
        side = by_rounds
    elif good_runs:
        last_good = statistics.median(run.denoise_step_ms or 0.0 for run in good_runs)
        side = odd_side(
            last_good=last_good, earlier=_earlier_levels(session, alert), before=before, after=after
        )
    excluded = []
    if by_rounds == "last_good":
        odd = good_runs
        why = "the last good commit's run lay far above its paired runs"
    elif by_rounds == "first_bad":
        odd = bad_runs
        why = "the first bad commit's run lay far above its paired runs"
    elif side == "last_good":
        odd = good_runs
        why = "the last good commit's run stood apart from the commits before it"
    else:
        step = math.log(after / before) if after != before else 0.0
        odd = [
            run
            for run in bad_runs
            if step != 0 and math.log((run.denoise_step_ms or before) / before) / step >= 0.5
        ]
        why = "the first bad commit's run stood at the suspect's level"
    for run in odd:
        run.excluded_reason = f"outlier: refuted by paired rounds (alert {alert.id}): {note}"[:2000]
        excluded.append({"run_id": run.id, "runner_id": run.runner_id, "value": run.denoise_step_ms})
    if odd:  # the series' newest points (``series_latest``, the overview's) without them
        refresh_series(session=session, keys=[(alert.case_id, alert.hardware_kind_id)])
    alert.evidence = {**alert.evidence, "outlier_runs": excluded, "outlier_side": side}
    alert.confirmation = AlertConfirmation.REFUTED
    names = _runner_names(session, [run.runner_id for run in odd])
    listing = (
        ", ".join(
            f"run {entry['run_id']} on {names.get(entry['runner_id'], 'an import')}" for entry in excluded
        )
        or "none stood apart"
    )
    record(
        alert,
        reason=f"{note}; left out of detection ({why}): {listing}",
        now=now,
        to_status=AlertStatus.INVALID,
    )


def odd_side(*, last_good: float, earlier: list[float], before: float, after: float) -> str:
    """Which nightly run a refuted suspect rests on: ``"first_bad"`` or ``"last_good"``.

    Paired rounds said the two commits measure alike, so one of the two nightly runs that made the
    step was off. The last good commit's run is the odd one when it stands apart from the commits
    before it, nearer the suspect's level than its own predecessors' (a bad night just before a
    normal one makes the normal one look like a change); otherwise the first bad commit's run is.
    Plain numbers (ms), no database: ``earlier`` are the medians of the commits before the last good.
    """
    if not earlier or before <= 0 or after <= 0 or last_good <= 0:
        return "first_bad"
    step = math.log(after / before)
    reference = statistics.median(earlier)
    if step == 0 or reference <= 0:
        return "first_bad"
    # How far the last good run sits from its predecessors, in the direction of the suspect's
    # "before" level away from its "after" level (the last good run is "before" here).
    drift = math.log(last_good / reference)
    return "last_good" if abs(drift) >= abs(step) / 2 and (drift > 0) == (step < 0) else "first_bad"


@dataclass(frozen=True)
class _NightlySide:
    """One end of a suspect: its commit's nightly runs, against that commit's arm in the rounds."""

    runs: list[Run]
    reference: list[float]  # the arm's clean values in the paired rounds
    interfered: list[
        Run
    ]  # nightly runs far above them (:func:`tracker.statistics.paired_rounds.interfered_runs`)


def _nightly_against_rounds(
    session: Session, alert: Alert, comparison: Comparison
) -> tuple[_NightlySide, _NightlySide]:
    """The last good and the first bad commit's nightly runs, each against its own paired arm."""
    judged = judged_against(session=session, case=alert.case, hardware=alert.hardware_kind)
    noise = judged.prior.noise_pct if judged.prior is not None else None
    sides = []
    for arm, commit_id in ((Arm.BASE, alert.last_good_commit_id), (Arm.HEAD, alert.first_bad_commit_id)):
        runs = _series_runs(session, alert, commit_id)
        reference = _arm_values(session, comparison, arm)
        odd = interfered_runs(
            [run.denoise_step_ms or 0.0 for run in runs], reference=reference, noise_pct=noise
        )
        sides.append(_NightlySide(runs, reference, [runs[index] for index in odd]))
    return sides[0], sides[1]


def _arm_values(session: Session, comparison: Comparison, arm: Arm) -> list[float]:
    """The values of record of one arm's clean runs in a comparison's rounds."""
    values = session.scalars(
        select(Run.denoise_step_ms)
        .join(Job, Job.id == Run.job_id)
        .where(
            Job.comparison_id == comparison.id,
            Job.arm == arm,
            Run.status == RunStatus.OK,
            Run.excluded_reason.is_(None),
            Run.denoise_step_ms > 0,
        )
    ).all()
    return [float(value) for value in values if value]


def _series_runs(session: Session, alert: Alert, commit_id: int | None) -> list[Run]:
    """A commit's counted series runs on the alert's series (not the paired rounds, not excluded)."""
    return list(
        session.scalars(
            select(Run)
            .join(Candidate, Candidate.id == Run.candidate_id)
            .outerjoin(Job, Job.id == Run.job_id)
            .where(
                Run.case_id == alert.case_id,
                Run.hardware_kind_id == alert.hardware_kind_id,
                Run.commit_id == commit_id,
                Run.status == RunStatus.OK,
                Run.excluded_reason.is_(None),
                Run.denoise_step_ms > 0,
                Candidate.is_plain,
                Job.comparison_id.is_(None),  # the paired rounds are evidence, not series points
            )
            .order_by(Run.id)
        )
    )


def _earlier_levels(session: Session, alert: Alert, window: int = 5) -> list[float]:
    """Medians of the (up to ``window``) series commits measured before the last good commit."""
    commits = load_series_runs(session=session, case=alert.case, hardware=alert.hardware_kind)
    positions = [index for index, entry in enumerate(commits) if entry.commit.id == alert.last_good_commit_id]
    if not positions:
        return []
    start = positions[0]
    return [
        statistics.median(run.value for run in entry.runs)
        for entry in commits[max(0, start - window) : start]
    ]


def _runner_names(session: Session, runner_ids: list[int | None]) -> dict[object, str]:
    ids = [runner_id for runner_id in runner_ids if runner_id is not None]
    if not ids:
        return {}
    return {runner.id: runner.name for runner in session.scalars(select(Runner).where(Runner.id.in_(ids)))}
