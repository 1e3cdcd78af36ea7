"""Alerts: changes found on a series, confirmed before they open, closed when a later change undoes them.

:func:`evaluate_series` loads a series (plain commits, successful runs not excluded), runs
:func:`tracker.changepoints.detect_changes` and brings the series' alerts in line with it:

* a change that matches no alert creates one (unique per series and first bad commit; a change
  re-placed by a commit or two, or found inside an alert's last-good..first-bad range, is the
  same alert);
* a suspect (one run at a new level) measured by perftrack's runners is re-run first: the alert
  waits in ``confirmation = "pending"`` while ``confirm`` jobs measure the suspect and the last
  good commit again. A re-run that holds makes it ``confirmed``; one that falls back refutes it
  (status ``invalid``), and the outlier run is excluded from detection with the runner named
  (:mod:`tracker.confirmation`);
* a change undoing an open alert (opposite direction, back to within half of the step) marks it
  ``fixed`` by that commit;
* imported results cannot be re-run: their alerts open at once, ``confirmation = "not_possible"``,
  and say when they rest on single runs without a noise estimate.

Loading a series and reading its threshold and alerts live in :mod:`tracker.series_state`; they are
re-exported here.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.alert_log import ACTOR, record
from tracker.changepoints import Change, Detection
from tracker.confirmation import enqueue_confirmation, settle_after_reruns, settle_vanished
from tracker.metrics import timed_detection
from tracker.models import (
    Alert,
    AlertStatus,
    Case,
    Commit,
    Direction,
    HardwareKind,
    Metric,
    RunSource,
)
from tracker.series_state import (
    LOOKBACK_COMMITS,
    SeriesCommit,
    SeriesRun,
    ThresholdInfo,
    detect_series,
    load_series_runs,
    series_alerts,
    series_threshold,
)

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

    ``on_confirmed`` is called for every alert that becomes a real change in this call (opened
    on established evidence or confirmed by a re-run): bisection starts there.
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
        alert = _matching_alert(context, change)
        if alert is not None:
            matched.add(alert.id)
            if primary.get(alert.id, change) is not change:
                continue  # a part of a change the alert already stands for (e.g. inside its range)
            if _update(context, alert, change):
                touched.append(alert)
                if alert.confirmed:
                    confirmed.append(alert)
            continue
        if _is_recorded_fix(context, change):
            continue
        undone = _undone_alert(context, change)
        if undone is not None:
            _mark_fixed(context, undone, change)
            touched.append(undone)
            continue
        created = _create(context, change)
        matched.add(created.id)
        touched.append(created)
        if created.confirmed:
            confirmed.append(created)
    for alert in alerts:
        if alert.confirmation == "pending" and alert.id not in matched and settle_vanished(context, alert):
            touched.append(alert)
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
    commits (the change moved), and never one that re-runs refuted.
    """
    first_bad = context.commits[change.index].commit
    direction = _direction(change)
    same_way = [alert for alert in context.alerts if alert.direction is direction]
    for alert in same_way:
        if first_bad.id in (alert.first_bad_commit_id, alert.culprit_commit_id):
            return alert
    for alert in same_way:
        if alert.confirmation != "refuted" and _within_range(alert, first_bad):
            return alert
    reported = {
        context.commits[other.index].commit.id
        for other in context.detection.changes
        if _direction(other) is direction and other is not change
    }
    for alert in same_way:
        if alert.confirmation == "refuted":
            continue
        if alert.first_bad_commit_id in reported or alert.culprit_commit_id in reported:
            continue
        where = context.position(alert.first_bad_commit_id)
        if where is not None and abs(where - change.index) <= MATCH_RADIUS:
            return alert
    return None


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


def _is_recorded_fix(context: _Context, change: Change) -> bool:
    """Whether this change is one an alert already records as its fix."""
    first_bad = context.commits[change.index].commit
    return any(alert.fixed_by_commit_id == first_bad.id for alert in context.alerts)


def _undone_alert(context: _Context, change: Change) -> Alert | None:
    """The newest live alert this change reverses: opposite direction, back within half the step."""
    direction = _direction(change)
    for alert in reversed(context.alerts):
        if alert.status not in _LIVE or alert.confirmation in ("pending", "refuted"):
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


def _create(context: _Context, change: Change) -> Alert:
    entry = context.commits[change.index]
    last_good = context.commits[change.index - 1].commit
    if change.established:
        confirmation = "confirmed" if change.kind == "excursion" else "held"
    elif _runs_from_jobs(entry):
        confirmation = "pending"
    else:
        confirmation = "not_possible"
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
        confirmed=confirmation in ("confirmed", "held"),
        confirmation=confirmation,
        evidence=_evidence(context, change),
        created_at=context.now,
        updated_at=context.now,
    )
    context.session.add(alert)
    context.session.flush()
    context.alerts.append(alert)
    record(alert, reason=_opening_reason(alert, change, confirmation), now=context.now, opening=True)
    if confirmation == "pending":
        enqueue_confirmation(context, alert)
    return alert


def _opening_reason(alert: Alert, change: Change, confirmation: str) -> str:
    what = f"{alert.change_pct:+.1f} % ({alert.before_value:.2f} → {alert.after_value:.2f} ms)"
    basis = {
        "held": f"held over {change.runs_after} runs at the new level",
        "confirmed": "confirmed by a re-run of the first bad commit",
        "pending": "one run at the new level: re-running it and the last good commit before raising it",
        "not_possible": "imported results, which perftrack cannot re-run",
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
    if alert.confirmation != "pending":
        return False
    if change.established:
        held_by = (
            "a re-run of the first bad commit" if change.kind == "excursion" else f"{change.runs_after} runs"
        )
        alert.confirmation = "confirmed" if change.kind == "excursion" else "held"
        alert.confirmed = True
        record(
            alert,
            reason=f"confirmed by {held_by}: now {alert.change_pct:+.1f} % "
            f"({alert.before_value:.2f} → {alert.after_value:.2f} ms)",
            now=context.now,
        )
        return True
    return settle_after_reruns(context, alert)


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
