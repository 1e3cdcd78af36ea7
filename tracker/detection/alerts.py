"""Alerts: changes found on a series, confirmed before they open, closed when a later change undoes them.

:func:`evaluate_series` loads a series (plain commits, successful runs not excluded), runs
:func:`tracker.statistics.changepoints.detect_changes` and brings the series' alerts in line with it:

* a change that matches no alert creates one (unique per series and first bad commit; a change
  re-placed by a commit or two, or found inside an alert's last-good..first-bad range, is the
  same alert);
* every change measured by perftrack's runners is a *suspect* first
  (:func:`tracker.statistics.paired_rounds.plan_change`): the alert waits in ``confirmation = pending`` while
  paired rounds of its last good and first bad commits decide (:mod:`tracker.detection.confirmation`):
  confirmed, refuted (status ``invalid``, the suspect run left out of detection) or unconfirmed
  because too noisy — never confirmed on one unpaired re-run, nor on runs that merely held;
* a change undoing a live regression (opposite direction, back to within half of the step) is a
  suspect improvement too; once confirmed it marks the regression ``fixed`` by its commit;
* imported results cannot be re-run: their alerts open at once, ``confirmation = not_possible``
  (``held`` when several runs stand at the new level), and an imported change undoing an alert
  marks it fixed at once.

Loading a series and reading its threshold and alerts live in :mod:`tracker.series.state`; they are
re-exported here.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.detection.alert_log import ACTOR, record
from tracker.detection.confirmation import start_confirmation
from tracker.models import (
    Alert,
    AlertConfirmation,
    AlertStatus,
    Case,
    Commit,
    Direction,
    HardwareKind,
    Metric,
    RunSource,
)
from tracker.observability.metrics import timed_detection
from tracker.series.state import (
    LOOKBACK_COMMITS,
    SeriesCommit,
    SeriesRun,
    ThresholdInfo,
    detect_series,
    load_series_runs,
    series_alerts,
    series_threshold,
)
from tracker.statistics.changepoints import Change, Detection
from tracker.statistics.paired_rounds import ChangeAction, plan_change

__all__ = [
    "ACTOR",
    "LOOKBACK_COMMITS",
    "MATCH_RADIUS",
    "AlertHook",
    "SeriesCommit",
    "SeriesRun",
    "ThresholdInfo",
    "detect_series",
    "evaluate_series",
    "load_series_runs",
    "series_alerts",
    "series_threshold",
]

MATCH_RADIUS = 3  # commits: a re-placed change within this distance is the same change
_LIVE = (AlertStatus.OPEN, AlertStatus.ACKNOWLEDGED)
# Alerts no later change can undo: nothing real was established.
_UNCONFIRMED = (AlertConfirmation.PENDING, AlertConfirmation.REFUTED, AlertConfirmation.TOO_NOISY)
# Something to do with an alert that has just become a confirmed change (bisection starts there).
AlertHook = Callable[[Alert], None]


@dataclass
class _Context:
    session: Session
    case: Case
    hardware: HardwareKind
    commits: list[SeriesCommit]
    detection: Detection
    alerts: list[Alert]
    now: dt.datetime

    def position(self, commit_id: int | None) -> int | None:
        for index, entry in enumerate(self.commits):
            if entry.commit.id == commit_id:
                return index
        return None


@timed_detection("series")
def evaluate_series(
    *,
    session: Session,
    case: Case,
    hardware: HardwareKind,
    now: dt.datetime,
    on_confirmed: AlertHook | None = None,
) -> list[Alert]:
    """Bring a series' alerts in line with what detection finds now; returns the alerts it touched.

    ``on_confirmed`` is called for every alert that opens as a real change in this call (imported
    results held over several runs): bisection starts there. Suspects are confirmed later, when
    their paired rounds are in (:func:`tracker.detection.confirmation.settle_confirmation`).
    """
    commits, detection = detect_series(session=session, case=case, hardware=hardware)
    if detection is None:
        return []
    alerts = list(
        session.scalars(
            select(Alert)
            .where(
                Alert.case_id == case.id,
                Alert.hardware_kind_id == hardware.id,
                Alert.metric == Metric.DENOISE_STEP_MS,
            )
            .order_by(Alert.id)
        )
    )
    context = _Context(session, case, hardware, commits, detection, alerts, now)
    touched: list[Alert] = []
    matched: set[int] = set()
    confirmed: list[Alert] = []
    primary = _primary_changes(context)
    for change in detection.changes:
        if change.index < 1:
            continue  # nothing measured before it: no last good commit
        retired = _retired_by_interference(context, change)
        if retired is not None:
            matched.add(retired.id)
            _suspect_anew(context, retired, change)  # its commit was measured again
            touched.append(retired)
            continue
        alert = _matching_alert(context, change)
        if alert is not None:
            matched.add(alert.id)
            if primary.get(alert.id, change) is not change:
                continue  # a part of a change the alert already stands for (e.g. inside its range)
            if _refuted_on_last_good(alert) and _last_good_of(context, change) != alert.last_good_commit_id:
                if _explained_by_confirmed(context, change):
                    continue  # the step from the new last good commit is a confirmed alert's
                _suspect_again(context, alert, change)  # its odd run, the last good one, is gone
                touched.append(alert)
                continue
            if _update(context, alert, change):
                touched.append(alert)
                if alert.confirmation.established:
                    confirmed.append(alert)
            continue
        if _is_recorded_fix(context, change) or _commit_has_alert(context, change):
            continue
        undone = _undone_alert(context, change)
        if undone is not None and not _runs_from_jobs(context.commits[change.index]):
            _mark_fixed(context, undone, change)  # imports cannot be re-run: the fix is taken as seen
            touched.append(undone)
            continue
        created = _create(context, change, undoes=undone)
        if created is None:
            continue
        matched.add(created.id)
        touched.append(created)
        if created.confirmation.established:
            confirmed.append(created)
    session.flush()
    if on_confirmed is not None:
        for alert in confirmed:
            on_confirmed(alert)
    return touched


def _direction(change: Change) -> Direction:
    return Direction.REGRESSION if change.is_regression else Direction.IMPROVEMENT


def _matching_alert(context: _Context, change: Change) -> Alert | None:
    """The alert this change already is: same commit, inside its range, or placed a little apart.

    Exact matches first (first bad commit or culprit), then an alert in the same direction whose
    last-good..first-bad range holds the commit (bisection fills that range with runs). Within a
    few commits, an alert matches only if detection no longer reports a change at the alert's own
    commits (the change moved), and never one that paired rounds refuted, confirmed or found too
    noisy (they measured it at its commit: a too-noisy suspect must not absorb a later change).
    """
    first_bad = context.commits[change.index].commit
    direction = _direction(change)
    same_way = [alert for alert in context.alerts if alert.direction is direction]
    for alert in same_way:
        if first_bad.id in (alert.first_bad_commit_id, alert.culprit_commit_id):
            return alert
    for alert in same_way:
        if alert.confirmation != AlertConfirmation.REFUTED and _within_range(alert, first_bad):
            return alert
    reported = {
        context.commits[other.index].commit.id
        for other in context.detection.changes
        if _direction(other) is direction and other is not change
    }
    for alert in same_way:
        if alert.confirmation in (
            AlertConfirmation.REFUTED,
            AlertConfirmation.CONFIRMED,
            AlertConfirmation.TOO_NOISY,
        ):
            continue  # paired rounds measured it at its commit: a change nearby is another suspect
        if alert.first_bad_commit_id in reported or alert.culprit_commit_id in reported:
            continue
        where = context.position(alert.first_bad_commit_id)
        if where is not None and abs(where - change.index) <= MATCH_RADIUS:
            return alert
    return None


def _refuted_on_last_good(alert: Alert) -> bool:
    """Refuted with the last good commit's run found to be the odd one (and excluded)."""
    return (
        alert.confirmation == AlertConfirmation.REFUTED and alert.evidence.get("outlier_side") == "last_good"
    )


def _last_good_of(context: _Context, change: Change) -> int | None:
    return context.commits[change.index - 1].commit.id if change.index > 0 else None


def _explained_by_confirmed(context: _Context, change: Change) -> bool:
    """Whether a confirmed alert the same way starts between the change's last good and first bad.

    With the last good commit's run left out, the change spans the commit before it too (which may
    have no series run left); when a confirmed alert stands for a step there, asking again would
    raise that step a second time. Commits are placed by the series' order (commit time, id).
    """
    direction = _direction(change)
    last_good = context.commits[change.index - 1].commit
    first_bad = context.commits[change.index].commit

    def key(commit: Commit) -> tuple[dt.datetime, int]:
        return (commit.committed_at, commit.id)

    for alert in context.alerts:
        if alert.direction is not direction or alert.confirmation != AlertConfirmation.CONFIRMED:
            continue
        starts = [commit for commit in (alert.first_bad_commit, alert.culprit_commit) if commit is not None]
        if any(key(last_good) < key(commit) < key(first_bad) for commit in starts):
            return True
    return False


def _suspect_again(context: _Context, alert: Alert, change: Change) -> None:
    """A suspect refuted because its last good run was the odd one: judge it against the new one."""
    last_good = context.commits[change.index - 1].commit
    alert.last_good_commit = last_good
    alert.last_good_commit_id = last_good.id
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.confirmation = AlertConfirmation.PENDING
    alert.evidence = {**alert.evidence, **_evidence(context, change), "outlier_side": None}
    record(
        alert,
        reason=f"a suspect again: its last good run was left out, so {alert.first_bad_commit.short_sha} "
        f"is judged against {last_good.short_sha} ({alert.change_pct:+.1f} %)",
        now=context.now,
        to_status=AlertStatus.OPEN,
    )
    start_confirmation(session=context.session, alert=alert, now=context.now)


def _retired_by_interference(context: _Context, change: Change) -> Alert | None:
    """The retired alert at this change's first bad commit whose question is asked anew.

    Either it rested on a run found interfered with (the run left detection and its commit was
    measured again): a change found there now, in either direction, is that alert's question
    anew; or its paired rounds showed a change the other way: a change reported there in that
    direction is. One alert per series and first bad commit
    (:func:`tracker.detection.confirmation.settle_confirmation`).
    """
    first_bad = context.commits[change.index].commit
    for alert in context.alerts:
        if alert.first_bad_commit_id != first_bad.id or alert.status is not AlertStatus.INVALID:
            continue
        if alert.evidence.get("interfered_runs"):
            return alert
        if alert.evidence.get("the_other_way") and alert.direction is not _direction(change):
            return alert
    return None


def _suspect_anew(context: _Context, alert: Alert, change: Change) -> None:
    """A suspect whose run was interfered with: judge what its commit's new run shows."""
    last_good = context.commits[change.index - 1].commit
    alert.direction = _direction(change)
    alert.last_good_commit = last_good
    alert.last_good_commit_id = last_good.id
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.confirmation = AlertConfirmation.PENDING
    kept = {
        key: value
        for key, value in alert.evidence.items()
        if key
        not in (
            "interfered_runs",
            "the_other_way",
            "paired_levels_ms",
            "paired_change_pct",
            "paired_ci_pct",
            "paired_rounds",
        )
    }
    alert.evidence = {**kept, **_evidence(context, change)}
    record(
        alert,
        reason=f"measured again: {alert.first_bad_commit.short_sha} now shows {alert.change_pct:+.1f} % "
        f"against {last_good.short_sha}, a suspect again",
        now=context.now,
        to_status=AlertStatus.OPEN,
    )
    start_confirmation(session=context.session, alert=alert, now=context.now)


def _primary_changes(context: _Context) -> dict[int, Change]:
    """For each existing alert several changes match, the one it stands for.

    The change at its culprit if bisection found one, else the largest: a small step left at the
    first bad commit by bisection's runs inside the range is part of the same change.
    """
    matches: dict[int, list[Change]] = {}
    for change in context.detection.changes:
        if change.index < 1:
            continue
        alert = _matching_alert(context, change)
        if alert is not None:
            matches.setdefault(alert.id, []).append(change)
    primary: dict[int, Change] = {}
    by_id = {alert.id: alert for alert in context.alerts}
    for alert_id, changes in matches.items():
        culprit = by_id[alert_id].culprit_commit_id
        at_culprit = [change for change in changes if context.commits[change.index].commit.id == culprit]
        primary[alert_id] = (
            at_culprit[0] if at_culprit else max(changes, key=lambda change: abs(change.change_pct))
        )
    return primary


def _within_range(alert: Alert, commit: Commit) -> bool:
    """Whether ``commit`` lies after the alert's last good commit and up to its first bad one."""
    good, bad = alert.last_good_commit, alert.first_bad_commit
    if good is None:
        return False
    return good.committed_at < commit.committed_at <= bad.committed_at


def _commit_has_alert(context: _Context, change: Change) -> bool:
    """Whether an alert (of either direction) already stands for this first bad commit.

    One alert per series and first bad commit: a change the other way at the same commit (its
    level re-estimated from more runs) is that alert's business, never a second alert.
    """
    first_bad = context.commits[change.index].commit
    return any(alert.first_bad_commit_id == first_bad.id for alert in context.alerts)


def _is_recorded_fix(context: _Context, change: Change) -> bool:
    """Whether this change is one an alert already records as its fix."""
    first_bad = context.commits[change.index].commit
    return any(alert.fixed_by_commit_id == first_bad.id for alert in context.alerts)


def _undone_alert(context: _Context, change: Change) -> Alert | None:
    """The newest live alert this change reverses: opposite direction, back within half the step."""
    direction = _direction(change)
    for alert in reversed(context.alerts):
        if alert.status not in _LIVE or alert.confirmation in _UNCONFIRMED:
            continue
        if alert.direction is direction or alert.direction is not Direction.REGRESSION:
            continue  # a regression is fixed; an improvement given back is a regression of its own
        where = context.position(alert.first_bad_commit_id)
        if where is not None and where >= change.index:
            continue
        step = abs(math.log(alert.after_value / alert.before_value))
        left = abs(math.log(change.after / alert.before_value))
        if left <= step / 2:
            return alert
    return None


def _runs_from_jobs(entry: SeriesCommit) -> bool:
    return any(run.source is RunSource.JOB for run in entry.runs)


def _create(context: _Context, change: Change, *, undoes: Alert | None = None) -> Alert | None:
    entry = context.commits[change.index]
    plan = plan_change(change, can_rerun=_runs_from_jobs(entry))
    if plan.action is ChangeAction.NOTHING:
        return None
    last_good = context.commits[change.index - 1].commit
    if plan.action is ChangeAction.CONFIRM:
        confirmation = AlertConfirmation.PENDING
    elif change.established:
        confirmation = AlertConfirmation.HELD
    else:
        confirmation = AlertConfirmation.NOT_POSSIBLE
    evidence = _evidence(context, change)
    if undoes is not None:
        evidence["undoes_alert_id"] = undoes.id
    alert = Alert(
        case_id=context.case.id,
        hardware_kind_id=context.hardware.id,
        metric=Metric.DENOISE_STEP_MS,
        direction=_direction(change),
        status=AlertStatus.OPEN,
        last_good_commit=last_good,
        first_bad_commit=entry.commit,
        before_value=change.before,
        after_value=change.after,
        change_pct=change.change_pct,
        threshold_pct=context.detection.threshold_pct,
        noise_pct=context.detection.noise.cv_pct if context.detection.noise else None,
        p_value=change.p_value,
        single_run_basis=change.single_run_basis,
        confirmation=confirmation,
        evidence=evidence,
        created_at=context.now,
        updated_at=context.now,
    )
    context.session.add(alert)
    context.session.flush()
    context.alerts.append(alert)
    record(alert, reason=_opening_reason(alert, change, confirmation), now=context.now, opening=True)
    if confirmation is AlertConfirmation.PENDING:
        start_confirmation(session=context.session, alert=alert, now=context.now)
    return alert


def _opening_reason(alert: Alert, change: Change, confirmation: AlertConfirmation) -> str:
    what = f"{alert.change_pct:+.1f} % ({alert.before_value:.2f} → {alert.after_value:.2f} ms)"
    basis = {
        AlertConfirmation.HELD: f"imported results held over {change.runs_after} runs at the new level",
        AlertConfirmation.PENDING: "a suspect until paired rounds of the last good and first bad commits decide",
        AlertConfirmation.NOT_POSSIBLE: "imported results, which perftrack cannot re-run",
    }[confirmation]
    noise = (
        "on single runs without a noise estimate"
        if change.single_run_basis
        else f"z = {change.z:.1f} against {alert.noise_pct:.2f} % run-to-run noise"
    )
    return f"{alert.direction.value} {what}, {noise}; {basis}"


def _evidence(context: _Context, change: Change) -> dict[str, object]:
    detection = context.detection
    return {
        "method": "single-run" if change.single_run_basis else "windowed Hodges-Lehmann segmentation",
        "kind": change.kind,
        "z": change.z,
        "p_value": change.p_value,
        "runs_before": change.runs_before,
        "runs_after": change.runs_after,
        "noise_pct": detection.noise.cv_pct if detection.noise else None,
        "noise_differences": detection.noise.differences if detection.noise else 0,
        "threshold_pct": detection.threshold_pct,
        "model_threshold_pct": detection.model_threshold_pct,
        "noise_threshold_pct": detection.noise_threshold_pct,
        "threshold_source": detection.threshold_source,
        "window": detection.config.window,
        "z_crit": detection.config.z_crit,
    }


def _update(context: _Context, alert: Alert, change: Change) -> bool:
    """Refresh a live alert with the latest estimate; settle a pending confirmation."""
    if alert.status not in _LIVE:
        return False
    alert.before_value, alert.after_value, alert.change_pct = change.before, change.after, change.change_pct
    alert.p_value = change.p_value
    alert.threshold_pct = context.detection.threshold_pct
    alert.noise_pct = context.detection.noise.cv_pct if context.detection.noise else None
    alert.single_run_basis = change.single_run_basis
    alert.evidence = {**alert.evidence, **_evidence(context, change)}
    if alert.confirmation != AlertConfirmation.NOT_POSSIBLE or not change.established:
        return False  # a suspect waits for its paired rounds, whatever the nightly runs say meanwhile
    alert.confirmation = AlertConfirmation.HELD
    record(
        alert,
        reason=f"imported results held over {change.runs_after} runs: now {alert.change_pct:+.1f} % "
        f"({alert.before_value:.2f} → {alert.after_value:.2f} ms)",
        now=context.now,
    )
    return True


def _mark_fixed(context: _Context, alert: Alert, change: Change) -> None:
    commit = context.commits[change.index].commit
    alert.fixed_by_commit = commit
    alert.fixed_by_commit_id = commit.id
    net = (change.after / alert.before_value - 1.0) * 100.0
    record(
        alert,
        reason=f"undone by {commit.short_sha} {commit.title!r}: {change.change_pct:+.1f} %, "
        f"now {change.after:.2f} ms against {alert.before_value:.2f} ms before the change ({net:+.1f} %)",
        now=context.now,
        to_status=AlertStatus.FIXED,
    )
