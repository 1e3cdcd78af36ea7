"""Which alert a change found on a series already is, if any.

A change is an existing alert when it lands on the alert's first bad commit or culprit, inside
its last-good..first-bad range, or (while detection no longer reports the alert's own commit) a
few commits apart, a confirmed alert included (its paired rounds pin the step to its commit);
one alert per series and first bad commit. A change may also undo a live regression, be the fix
an alert records, or re-ask the question of an alert retired because its run was interfered with. :func:`tracker.detection.alerts.evaluate_series` asks these questions of
every change, over a :class:`SeriesContext`.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from sqlalchemy.orm import Session

from tracker.enums import AlertConfirmation, AlertStatus, Direction, RunSource
from tracker.models import Alert, Case, Commit, HardwareKind
from tracker.series.state import SeriesCommit
from tracker.statistics.changepoints import Change, Detection
from tracker.statistics.paired_rounds import same_size

MATCH_RADIUS = 3  # commits: a re-placed change within this distance is the same change
LIVE = (AlertStatus.OPEN, AlertStatus.ACKNOWLEDGED)
# Alerts no later change can undo: nothing real was established.
_UNCONFIRMED = (AlertConfirmation.PENDING, AlertConfirmation.REFUTED, AlertConfirmation.TOO_NOISY)


@dataclass
class SeriesContext:
    """One series as detection sees it now: its commits, what detection found, its alerts."""

    session: Session
    case: Case
    hardware: HardwareKind
    commits: list[SeriesCommit]
    detection: Detection
    alerts: list[Alert]
    now: dt.datetime

    def position(self, commit_id: int | None) -> int | None:
        """The index of a commit in the series, ``None`` when it has no run there."""
        for index, entry in enumerate(self.commits):
            if entry.commit.id == commit_id:
                return index
        return None


def direction_of(change: Change) -> Direction:
    """The direction of a change: a regression when it is slower."""
    return Direction.REGRESSION if change.is_regression else Direction.IMPROVEMENT


def matching_alert(context: SeriesContext, change: Change) -> Alert | None:
    """The alert this change already is: same commit, inside its range, or placed a little apart.

    Exact matches first (first bad commit or culprit), then an alert in the same direction whose
    last-good..first-bad range holds the commit (bisection fills that range with runs). Within a
    few commits, an alert matches only if detection no longer reports a change at the alert's own
    commits (the change moved). A confirmed alert pins its step there: paired rounds put the change
    at its commit, so detection placing a step of about its size a commit or two away as runs
    arrive is the same change, never a second alert (a step of another size is a change of its
    own). Never one that paired rounds refuted or found too noisy (they found no change at its
    commit: a too-noisy suspect must not absorb a later change), and never across another
    confirmed step: where the level moved in between, a step beyond it is not this one re-placed.
    """
    first_bad = context.commits[change.index].commit
    direction = direction_of(change)
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
        if direction_of(other) is direction and other is not change
    }
    for alert in same_way:
        if alert.confirmation in (AlertConfirmation.REFUTED, AlertConfirmation.TOO_NOISY):
            continue  # paired rounds found no change at its commit: a change nearby is another suspect
        if alert.first_bad_commit_id in reported or alert.culprit_commit_id in reported:
            continue
        where = context.position(alert.first_bad_commit_id)
        if where is None or abs(where - change.index) > MATCH_RADIUS:
            continue
        if _confirmed_start_between(context, alert.first_bad_commit, first_bad, besides=alert):
            continue  # the level moved in between: a change of its own
        if alert.confirmation == AlertConfirmation.CONFIRMED and not same_size(
            change.change_pct,
            float(alert.evidence.get("paired_change_pct") or alert.change_pct),
            alert.threshold_pct,
        ):
            continue  # a step of another size next to a confirmed one is a change of its own
        return alert
    return None


def refuted_on_last_good(alert: Alert) -> bool:
    """Refuted with the last good commit's run found to be the odd one (and excluded)."""
    return (
        alert.confirmation == AlertConfirmation.REFUTED and alert.evidence.get("outlier_side") == "last_good"
    )


def last_good_of(context: SeriesContext, change: Change) -> int | None:
    """The id of the commit before the change's first bad one."""
    return context.commits[change.index - 1].commit.id if change.index > 0 else None


def explained_by_confirmed(context: SeriesContext, change: Change) -> bool:
    """Whether a confirmed alert the same way starts between the change's last good and first bad.

    With the last good commit's run left out, the change spans the commit before it too (which may
    have no series run left); when a confirmed alert stands for a step there, asking again would
    raise that step a second time. Commits are placed by the series' order (commit time, id).
    """
    last_good = context.commits[change.index - 1].commit
    first_bad = context.commits[change.index].commit
    return _confirmed_start_between(context, last_good, first_bad, direction=direction_of(change))


def _confirmed_start_between(
    context: SeriesContext,
    one: Commit,
    other: Commit,
    *,
    direction: Direction | None = None,
    besides: Alert | None = None,
) -> bool:
    """Whether a confirmed alert (in ``direction``, or either; not ``besides``) has its first bad
    commit or culprit strictly between two commits, placed by the series' order (commit time, id)."""

    def key(commit: Commit) -> tuple[dt.datetime, int]:
        return (commit.committed_at, commit.id)

    low, high = sorted((key(one), key(other)))
    for alert in context.alerts:
        if alert is besides or alert.confirmation != AlertConfirmation.CONFIRMED:
            continue
        if direction is not None and alert.direction is not direction:
            continue
        starts = [commit for commit in (alert.first_bad_commit, alert.culprit_commit) if commit is not None]
        if any(low < key(commit) < high for commit in starts):
            return True
    return False


def retired_by_interference(context: SeriesContext, change: Change) -> Alert | None:
    """The retired alert at this change's first bad commit whose question is asked anew.

    Either it rested on a run found interfered with (the run left detection and its commit was
    measured again): a change found there now, in either direction, is that alert's question
    anew; or its paired rounds showed a change the other way: a change reported there in that
    direction is; or they found its *last good* run the odd one, which left the series: against
    the commit before that one the step may read the other way (a real change the odd run had
    hidden), and that is a new question too. (The same direction is
    :func:`tracker.detection.alerts.evaluate_series`' ``suspect_again``.) One alert per series
    and first bad commit (:func:`tracker.detection.confirmation.settle_confirmation`).
    """
    first_bad = context.commits[change.index].commit
    for alert in context.alerts:
        if alert.first_bad_commit_id != first_bad.id or alert.status is not AlertStatus.INVALID:
            continue
        if alert.evidence.get("interfered_runs"):
            return alert
        other_way = alert.direction is not direction_of(change)
        if alert.evidence.get("the_other_way") and other_way:
            return alert
        if (
            other_way
            and refuted_on_last_good(alert)
            and last_good_of(context, change) != alert.last_good_commit_id
            and not explained_by_confirmed(context, change)
        ):
            return alert
    return None


def primary_changes(context: SeriesContext) -> dict[int, Change]:
    """For each existing alert several changes match, the one it stands for.

    The change at its culprit if bisection found one, else the largest: a small step left at the
    first bad commit by bisection's runs inside the range is part of the same change.
    """
    matches: dict[int, list[Change]] = {}
    for change in context.detection.changes:
        if change.index < 1:
            continue
        alert = matching_alert(context, change)
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


def commit_has_alert(context: SeriesContext, change: Change) -> bool:
    """Whether an alert (of either direction) already stands for this first bad commit.

    One alert per series and first bad commit: a change the other way at the same commit (its
    level re-estimated from more runs) is that alert's business, never a second alert.
    """
    first_bad = context.commits[change.index].commit
    return any(alert.first_bad_commit_id == first_bad.id for alert in context.alerts)


def is_recorded_fix(context: SeriesContext, change: Change) -> bool:
    """Whether this change is one an alert already records as its fix."""
    first_bad = context.commits[change.index].commit
    return any(alert.fixed_by_commit_id == first_bad.id for alert in context.alerts)


def undone_alert(context: SeriesContext, change: Change) -> Alert | None:
    """The newest live alert this change reverses: opposite direction, back within half the step."""
    direction = direction_of(change)
    for alert in reversed(context.alerts):
        if alert.status not in LIVE or alert.confirmation in _UNCONFIRMED:
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


def runs_from_jobs(entry: SeriesCommit) -> bool:
    """Whether perftrack's runners measured this commit (its runs can be re-run)."""
    return any(run.source is RunSource.JOB for run in entry.runs)
