"""The culprit's pull request is told: a confirmed group whose culprit commit came from a pull request
gets one comment there, edited as the group grows (docs/github-bot.md, "The culprit's pull request").

:func:`tell_culprit` queues the comment in the transaction that confirmed an alert or named its
culprit; the outbox renders it when it is sent (:func:`culprit_comment`), so it shows the group as it
is then. A group is told once: a row is queued only when the group's alerts (or the evidence runs
read for their diagnosis) differ from those its last row told, and the comment is found again by
its id or its hidden marker, so a change edits it.

Only a server that can send queues it (:class:`CulpritTelling`: GitHub credentials set, telling
culprits on for the repository), and only while it is news: a group whose alerts were first
confirmed more than ``github_culprit_max_age_days`` ago is not told, and a row that waited longer
than that unsent is dropped, with a log line, when a flush claims it. A server given credentials
later therefore never comments on old pull requests.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tracker.detection.group_notices import paired
from tracker.detection.grouping import SUSPECT_CONFIRMATIONS
from tracker.diagnosis.loading import alert_diagnoses
from tracker.enums import Direction, OutboxKind
from tracker.github.render import code, plain
from tracker.models import Alert, AlertGroup, EvidenceJob, GithubOutbox
from tracker.settings import CulpritTelling, Settings
from tracker.vcs.pulls import pull_request_of

logger = logging.getLogger(__name__)

FINDINGS_PER_ALERT = 3


def group_marker(group_id: int) -> str:
    """The hidden marker that finds a group's comment on its culprit's pull request again."""
    return f"<!-- perftrack:group:{group_id} -->"


def group_link(public_url: str | None, group_id: int) -> str | None:
    """The dashboard page of a group, when the dashboard's public URL is known."""
    return f"{public_url.rstrip('/')}/groups/{group_id}" if public_url else None


def tell_culprit(
    *, session: Session, group: AlertGroup | None, telling: CulpritTelling | None, now: dt.datetime
) -> GithubOutbox | None:
    """Queue the comment on the pull request the group's culprit came from, when there is one to tell
    (a culprit, from a PR, on GitHub, confirmed alerts), this server can send it (``telling``), its
    alerts were first confirmed within ``telling.max_age``, and they changed since it was last told."""
    if telling is None or group is None or group.culprit_commit is None or group.merged_into_id is not None:
        return None
    pull = pull_request_of(group.culprit_commit)
    alerts = told_alerts(group)
    if pull is None or pull.url is None or not alerts:  # no PR, or not on GitHub
        return None
    repository, target = "/".join(pull.url.split("/")[3:5]), str(pull.number)  # .../owner/name/pull/N
    if not telling.tells(repository) or now - first_confirmed(alerts) > telling.max_age:
        return None
    alert_ids = sorted(alert.id for alert in alerts)
    told = {"group_id": group.id, "alert_ids": alert_ids, "evidence_read": _evidence_read(session, alert_ids)}
    earlier = session.scalars(
        select(GithubOutbox)
        .where(GithubOutbox.kind == OutboxKind.CULPRIT, GithubOutbox.target == target)
        .where(GithubOutbox.repository == repository)
        .order_by(GithubOutbox.id.desc())
    )
    last = next((row for row in earlier if row.payload.get("group_id") == group.id), None)
    if last is not None and last.payload == told:
        return None
    row = GithubOutbox(
        kind=OutboxKind.CULPRIT,
        repository=repository,
        target=target,
        payload=told,
        attempts=0,
    )
    session.add(row)
    session.flush()
    return row


def first_confirmed(alerts: list[Alert]) -> dt.datetime:
    """When the earliest of these alerts was first seen confirmed (opened, for one never marked)."""
    return min(alert.confirmed_at or alert.created_at for alert in alerts)


def _evidence_read(session: Session, alert_ids: list[int]) -> int:
    """How many evidence runs of these alerts have been read: the diagnosis grows with each."""
    return (
        session.scalar(
            select(func.count())
            .select_from(EvidenceJob)
            .where(EvidenceJob.alert_id.in_(alert_ids), EvidenceJob.summarized_at.is_not(None))
        )
        or 0
    )


def told_alerts(group: AlertGroup) -> list[Alert]:
    """The group's alerts a comment tells: confirmed ones (suspects are in no group, but be sure);
    none for a merged group (its alerts are its successor's to tell)."""
    if group.merged_into_id is not None:
        return []
    return [alert for alert in group.alerts if alert.confirmation not in SUSPECT_CONFIRMATIONS]


def culprit_comment(*, session: Session, group: AlertGroup, public_url: str | None) -> str:
    """The comment's text: what moved, by how much, where, why, and how to answer; one line when
    the group holds only improvements."""
    alerts = told_alerts(group)
    culprit = group.culprit_commit
    sha = code(culprit.short_sha) if culprit is not None else "this pull request"
    link = group_link(public_url, group.id)
    named = f"[group {group.id}]({link})" if link else f"group {group.id}"
    if all(alert.direction is Direction.IMPROVEMENT for alert in alerts):
        moved = ", ".join(f"{_where(alert)} {_size(alert)}" for alert in alerts)
        return (
            f"perftrack: {sha} from this pull request improved {moved} ({named}).\n\n{group_marker(group.id)}"
        )
    diagnoses = alert_diagnoses(session=session, alerts=alerts)
    lines = [
        "### perftrack: this pull request moved performance",
        "",
        (
            f"Nightly detection confirmed these changes and bisection named {sha}, merged here, as their "
            f"culprit ({named})."
        ),
        "",
        "| case | GPU | metric | change | paired interval (95 % one-sided bounds) |",
        "|---|---|---|---|---|",
    ]
    lines += [_row(alert) for alert in alerts]
    why = [
        f"- {_where(alert)}: " + " · ".join(plain(finding.summary) for finding in found[:FINDINGS_PER_ALERT])
        for alert in alerts
        if (found := diagnoses.get(alert.id))
    ]
    if why:
        lines += ["", "**Why**", *why]
    lines += [
        "",
        (
            "To answer: open a fix and comment `/perf` on its pull request; perftrack measures it against "
            "its merge base in paired rounds and says whether it wins this back."
        ),
        "",
        group_marker(group.id),
    ]
    return "\n".join(lines)


def _where(alert: Alert) -> str:
    return f"{code(alert.case.slug)} on {plain(alert.hardware_kind.name)}"


def _row(alert: Alert) -> str:
    change, ci = paired(alert)
    interval = f"[{ci[0]:+.1f}, {ci[1]:+.1f}] %" if ci is not None else "—"
    return (
        f"| {code(alert.case.slug, cell=True)} | {plain(alert.hardware_kind.name)} | "
        f"{alert.metric.value} ({alert.direction.value}) | {change:+.1f} % | {interval} |"
    )


def _size(alert: Alert) -> str:
    change, ci = paired(alert)
    interval = f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci is not None else ""
    return f"{change:+.1f} %{interval}"


@dataclass(frozen=True)
class Told:
    """What a claimed ``culprit`` row sends: the comment's text, its marker, its id when known."""

    body: str
    marker: str
    comment_id: int | None


def claim(*, session: Session, settings: Settings, row: GithubOutbox, now: dt.datetime) -> Told | None:
    """Render a claimed ``culprit`` row; None, the row marked done unsent, when its group is gone or
    merged, the repository's setting turns telling culprits off, or it waited unsent longer than
    ``github_culprit_max_age_days`` (logged: a comment that late would reach an old pull request)."""
    group = session.get(AlertGroup, row.payload.get("group_id"))
    max_age = dt.timedelta(days=settings.github_culprit_max_age_days)
    why = None
    if group is None or not told_alerts(group):
        why = "the group is gone or merged"
    elif not settings.tells_culprits(row.repository):
        why = "turned off"
    elif now - row.created_at > max_age:
        why = f"queued {row.created_at:%Y-%m-%d %H:%M} UTC, unsent for longer than {max_age.days} days"
        logger.warning("culprit comment on %s#%s dropped: %s", row.repository, row.target, why)
    if group is None or why is not None:
        row.last_error = f"not sent: {why}"
        row.attempts += 1
        row.done_at = now
        return None
    body = culprit_comment(session=session, group=group, public_url=settings.public_url)
    return Told(body=body, marker=group_marker(group.id), comment_id=group.github_comment_id)


def remember_comment(*, session: Session, payload: dict[str, Any], comment_id: int) -> None:
    """Keep the id of the comment a ``culprit`` row created or edited on its group."""
    group = session.get(AlertGroup, payload.get("group_id"))
    if group is not None:
        group.github_comment_id = comment_id


def superseded(session: Session, row: GithubOutbox) -> bool:
    """Whether a newer unsent row of the same group makes ``row`` needless (it renders the same)."""
    newer = session.scalars(
        select(GithubOutbox).where(
            GithubOutbox.kind == OutboxKind.CULPRIT,
            GithubOutbox.repository == row.repository,
            GithubOutbox.target == row.target,
            GithubOutbox.done_at.is_(None),
            GithubOutbox.id > row.id,
        )
    )
    return any(other.payload.get("group_id") == row.payload.get("group_id") for other in newer)
