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

Which alert a change already is lives in :mod:`tracker.detection.alert_matching`; what a change does
to an alert (open, refresh, ask again, fix) in :mod:`tracker.detection.alert_changes`. Loading a
series and reading its threshold and alerts live in :mod:`tracker.series.state`; they are
re-exported here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.detection.alert_changes import (
    create_alert,
    mark_fixed,
    suspect_again,
    suspect_anew,
    update_alert,
)
from tracker.detection.alert_log import ACTOR
from tracker.detection.alert_matching import (
    SeriesContext,
    commit_has_alert,
    explained_by_confirmed,
    is_recorded_fix,
    last_good_of,
    matching_alert,
    primary_changes,
    refuted_on_last_good,
    retired_by_interference,
    runs_from_jobs,
    undone_alert,
)
from tracker.detection.grouping import place
from tracker.enums import Metric
from tracker.models import Alert, Case, HardwareKind
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
from tracker.statistics.changepoints import Change

__all__ = [
    "ACTOR",
    "LOOKBACK_COMMITS",
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

# Something to do with an alert that has just become a confirmed change (bisection starts there).
AlertHook = Callable[[Alert], None]
# The alert a change touched, and whether it has just opened as a confirmed change.
_Touched = tuple[Alert, bool]


def evaluate_series(
    *,
    session: Session,
    case: Case,
    hardware: HardwareKind,
    now: dt.datetime,
    on_confirmed: AlertHook | None = None,
    commits: list[SeriesCommit] | None = None,
) -> list[Alert]:
    """Bring a series' alerts in line with what detection finds now; returns the alerts it touched.

    ``on_confirmed`` is called for every alert that opens as a real change in this call (imported
    results held over several runs): bisection starts there. Suspects are confirmed later, when
    their paired rounds are in (:func:`tracker.detection.confirmation.settle_confirmation`).
    ``commits``: the series as :func:`load_series_runs` just loaded it, from a caller that checks
    its outputs on the same load; loaded here when not given.
    """
    commits, detection = detect_series(session=session, case=case, hardware=hardware, commits=commits)
    if detection is None:
        return []
    alerts = _alerts_of(session=session, case=case, hardware=hardware)
    context = SeriesContext(session, case, hardware, commits, detection, alerts, now)
    touched: list[Alert] = []
    confirmed: list[Alert] = []
    primary = primary_changes(context)
    for change in detection.changes:
        if change.index < 1:
            continue  # nothing measured before it: no last good commit
        outcome = _apply(context, change, primary)
        if outcome is not None:
            alert, newly_confirmed = outcome
            touched.append(alert)
            if newly_confirmed:
                confirmed.append(alert)
    for alert in touched:
        place(session=session, alert=alert, now=now)
    session.flush()
    if on_confirmed is not None:
        for alert in confirmed:
            on_confirmed(alert)
    return touched


def _alerts_of(*, session: Session, case: Case, hardware: HardwareKind) -> list[Alert]:
    """Every alert of the series on the metric detection watches, oldest first."""
    return list(
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


def _apply(context: SeriesContext, change: Change, primary: dict[int, Change]) -> _Touched | None:
    """Bring the alerts in line with one change; the alert it touched, if any."""
    retired = retired_by_interference(context, change)
    if retired is not None:
        suspect_anew(context, retired, change)  # its commit was measured again
        return retired, False
    alert = matching_alert(context, change)
    if alert is not None:
        return _apply_to_match(context, change, alert, primary)
    if is_recorded_fix(context, change) or commit_has_alert(context, change):
        return None
    undone = undone_alert(context, change)
    if undone is not None and not runs_from_jobs(context.commits[change.index]):
        mark_fixed(context, undone, change)  # imports cannot be re-run: the fix is taken as seen
        return undone, False
    created = create_alert(context, change, undoes=undone)
    if created is None:
        return None
    return created, created.confirmation.established


def _apply_to_match(
    context: SeriesContext, change: Change, alert: Alert, primary: dict[int, Change]
) -> _Touched | None:
    """A change that is an existing alert: refresh it, or judge it again from a new last good commit."""
    if primary.get(alert.id, change) is not change:
        return None  # a part of a change the alert already stands for (e.g. inside its range)
    if refuted_on_last_good(alert) and last_good_of(context, change) != alert.last_good_commit_id:
        if explained_by_confirmed(context, change):
            return None  # the step from the new last good commit is a confirmed alert's
        suspect_again(context, alert, change)  # its odd run, the last good one, is gone
        return alert, False
    if update_alert(context, alert, change):
        return alert, alert.confirmation.established
    return None
