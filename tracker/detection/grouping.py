"""Which group an alert belongs to (docs/groups.md, "The rule").

Alerts of one repository whose culprit commit is the same are one group. Before bisection names a
culprit, an alert joins the oldest group of its repository whose range overlaps its own
(last good, first bad], and the group's range narrows to the overlap: one commit in it could have
moved every alert of the group. A culprit group's range is its culprit: an alert whose range holds
that commit joins it. Suspects (paired rounds still deciding, refuted, too noisy) are in no group.

:func:`place` is called wherever an alert's confirmation, range or culprit changes: detection
(speed and output alerts), confirmation, bisection.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, aliased

from tracker.detection.group_notices import tell_if_fixed
from tracker.enums import AlertConfirmation
from tracker.models import Alert, AlertGroup, Commit

# Suspects are not alerts: paired rounds are still deciding, refuted them, or could not tell
# them from noise at the round cap ("unconfirmed: too noisy").
SUSPECT_CONFIRMATIONS = (AlertConfirmation.PENDING, AlertConfirmation.REFUTED, AlertConfirmation.TOO_NOISY)

# A range (last good, first bad]: None as the low end is open (no last good commit).
_Range = tuple[Commit | None, Commit]


def place(*, session: Session, alert: Alert, now: dt.datetime) -> AlertGroup | None:
    """Put ``alert`` in the group the rule gives it, regrouping what its move changes; returns it."""
    if alert.confirmation in SUSPECT_CONFIRMATIONS:
        _move(session, alert, None, now)
        return None
    if alert.culprit_commit is not None:
        return _place_culprit(session, alert, alert.culprit_commit, now)
    current = alert.group
    if current is not None and _takes(current, alert):
        _rerange(current)  # its range may have moved since it joined
        return current
    target = _overlapping_group(session, alert)
    if target is None:
        target = _new_group(session, alert, culprit=None, now=now)
    else:
        _narrow(target, alert)
    _move(session, alert, target, now)
    return target


def _place_culprit(session: Session, alert: Alert, culprit: Commit, now: dt.datetime) -> AlertGroup:
    """An alert whose culprit is known: its range group becomes the culprit's when the culprit
    lies in the group's range (or merges into the culprit's group); else the alert moves alone."""
    current = alert.group
    if current is not None and current.culprit_commit_id == culprit.id:
        return current
    existing = _culprit_group(session, culprit)
    if current is not None and current.culprit_commit is None and _holds(_group_range(current), culprit):
        if existing is None:
            current.culprit_commit = culprit
            current.updated_at = now
            return current
        for member in list(current.alerts):
            _move(session, member, existing, now)
        return existing
    target = existing or _new_group(session, alert, culprit=culprit, now=now)
    _move(session, alert, target, now)
    return target


def _move(session: Session, alert: Alert, target: AlertGroup | None, now: dt.datetime) -> None:
    """Move ``alert`` to ``target``; a group it leaves is re-ranged, or merged (or deleted) if empty."""
    old = alert.group
    if old is target:
        return
    alert.group = target
    if target is not None:
        target.updated_at = now
    if old is None:
        return
    old.updated_at = now
    if old.alerts:
        _rerange(old)
        # What it keeps may all be fixed now (an open alert left): the group reads fixed, and says so.
        tell_if_fixed(session=session, group=old, now=now)
    elif target is not None:
        _merge(old, target)
    else:
        for earlier in session.scalars(select(AlertGroup).where(AlertGroup.merged_into_id == old.id)):
            earlier.merged_into = None
        session.delete(old)


def _merge(old: AlertGroup, into: AlertGroup) -> None:
    """``old`` lost its last alert to ``into``: its address leads there, its triage goes along."""
    old.merged_into = into
    into.assignee = into.assignee or old.assignee
    into.issue_url = into.issue_url or old.issue_url


def _new_group(session: Session, alert: Alert, *, culprit: Commit | None, now: dt.datetime) -> AlertGroup:
    group = AlertGroup(
        repository_id=alert.first_bad_commit.repository_id,
        culprit_commit=culprit,
        last_good_commit=alert.last_good_commit,
        first_bad_commit=alert.first_bad_commit,
        created_at=now,
    )
    session.add(group)
    return group


def _culprit_group(session: Session, culprit: Commit) -> AlertGroup | None:
    return session.scalar(
        select(AlertGroup)
        .where(AlertGroup.culprit_commit_id == culprit.id, AlertGroup.merged_into_id.is_(None))
        .order_by(AlertGroup.id)
        .limit(1)
    )


def _overlapping_group(session: Session, alert: Alert) -> AlertGroup | None:
    """The oldest live group of the alert's repository whose range overlaps the alert's.

    The query keeps the groups whose (last good, first bad] can reach the alert's range by commit
    time (a culprit lies in its group's range, so culprit groups are among them); :func:`_takes`
    decides.
    """
    low, high = _alert_range(alert)
    group_low, group_high = aliased(Commit), aliased(Commit)
    query = (
        select(AlertGroup)
        .join(group_high, group_high.id == AlertGroup.first_bad_commit_id)
        .outerjoin(group_low, group_low.id == AlertGroup.last_good_commit_id)
        .where(
            AlertGroup.repository_id == high.repository_id,
            AlertGroup.merged_into_id.is_(None),
            or_(group_low.id.is_(None), group_low.committed_at <= high.committed_at),
        )
        .order_by(AlertGroup.id)
    )
    if low is not None:
        query = query.where(group_high.committed_at >= low.committed_at)
    return next((group for group in session.scalars(query) if _takes(group, alert)), None)


def _alert_range(alert: Alert) -> _Range:
    return alert.last_good_commit, alert.first_bad_commit


def _group_range(group: AlertGroup) -> _Range:
    return group.last_good_commit, group.first_bad_commit


def _takes(group: AlertGroup, alert: Alert) -> bool:
    """Whether the alert's range overlaps the group's (a culprit group's range is its culprit)."""
    mine = _alert_range(alert)
    if group.culprit_commit is not None:
        return _holds(mine, group.culprit_commit)
    return _overlaps(_group_range(group), mine)


def _overlaps(one: _Range, other: _Range) -> bool:
    """Whether (low, high] ranges share a commit."""
    (one_low, one_high), (other_low, other_high) = one, other
    return (one_low is None or _at(one_low) < _at(other_high)) and (
        other_low is None or _at(other_low) < _at(one_high)
    )


def _holds(span: _Range, commit: Commit) -> bool:
    """Whether ``commit`` lies in (low, high]."""
    low, high = span
    return (low is None or _at(low) < _at(commit)) and _at(commit) <= _at(high)


def _narrow(group: AlertGroup, alert: Alert) -> None:
    """A range group's range becomes the overlap with the alert's (a culprit group keeps its culprit)."""
    if group.culprit_commit is not None:
        return
    low, high = _alert_range(alert)
    if low is not None and (group.last_good_commit is None or _at(low) > _at(group.last_good_commit)):
        group.last_good_commit = low
    if _at(high) < _at(group.first_bad_commit):
        group.first_bad_commit = high


def _rerange(group: AlertGroup) -> None:
    """A range group's range after an alert left: the overlap of the ranges of those left."""
    if group.culprit_commit is not None or not group.alerts:
        return
    first, *others = group.alerts
    group.last_good_commit, group.first_bad_commit = _alert_range(first)
    for member in others:
        _narrow(group, member)


def _at(commit: Commit) -> tuple[dt.datetime, int]:
    """Where a commit sits in its repository's history, as series order it."""
    return commit.committed_at, commit.id
