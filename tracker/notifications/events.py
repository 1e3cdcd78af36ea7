"""An event queued to every subscription it concerns, in the transaction of the change it reports.

Each event is a :class:`Notice`: its kind, its subject (a kind and an id: an alert group, a
comparison, a nightly run), a title and lines of text, a link, plain details, and its scope
(the models, hardware kinds and repository it is about). :func:`notify` writes one
``notification_outbox`` row per enabled subscription that wants the event and whose filters the
scope passes; :mod:`tracker.notifications.outbox` sends them after commit. A notice with a
``dedupe`` key reaches each subscription once (a verdict recomputed tells once); the row is
inserted in a savepoint, so a duplicate never fails the caller's transaction.

Builders here: :func:`comparison_notice` (a pull request's comparison reached its verdict) and
:func:`nightly_notice` (a night's summary). An alert group's events (confirmed, culprit named,
fixed) are built by :mod:`tracker.detection.group_notices`, which knows what a group is.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.enums import NotificationEvent, NotificationSubject
from tracker.models import (
    Case,
    Comparison,
    NightlyRun,
    NotificationOutbox,
    NotificationSubscription,
    Repository,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scope:
    """What an event is about, for the subscriptions' filters; ``None``: the filter does not apply
    (a nightly summary is about no single model)."""

    models: frozenset[str] | None = None
    hardware: frozenset[str] | None = None
    repository: str | None = None


@dataclass(frozen=True)
class Notice:
    """One event, as every format renders it."""

    event: NotificationEvent
    subject_kind: NotificationSubject
    subject_id: int | None
    title: str
    lines: tuple[str, ...] = ()
    path: str | None = None  # the tracker page it links to; made absolute when sent
    details: dict[str, Any] = field(default_factory=dict)
    scope: Scope = Scope()
    dedupe: str | None = None

    def payload(self) -> dict[str, Any]:
        """The stored form: what :mod:`tracker.notifications.bodies` renders."""
        return {
            "title": self.title,
            "lines": list(self.lines),
            "path": self.path,
            "details": self.details,
        }


def matches(subscription: NotificationSubscription, notice: Notice) -> bool:
    """Whether the subscription wants the notice: its event, and each filter that applies passed."""
    if not subscription.enabled or notice.event.value not in subscription.events:
        return False
    scope = notice.scope
    if subscription.models and scope.models is not None and not scope.models & set(subscription.models):
        return False
    if (
        subscription.hardware
        and scope.hardware is not None
        and not scope.hardware & set(subscription.hardware)
    ):
        return False
    return not (
        subscription.repositories
        and scope.repository is not None
        and scope.repository not in subscription.repositories
    )


def notify(*, session: Session, notice: Notice) -> list[NotificationOutbox]:
    """Queue the notice to every subscription that wants it (sent after the caller commits)."""
    subscriptions = session.scalars(
        select(NotificationSubscription).where(NotificationSubscription.enabled.is_(True))
    ).all()
    return [
        row
        for subscription in subscriptions
        if matches(subscription, notice)
        and (row := queue_delivery(session=session, subscription=subscription, notice=notice)) is not None
    ]


def listening(*, session: Session, event: NotificationEvent) -> bool:
    """Whether any enabled subscription wants ``event`` (so a notice is built only when it is)."""
    events = session.scalars(
        select(NotificationSubscription.events).where(NotificationSubscription.enabled.is_(True))
    ).all()
    return any(event.value in wanted for wanted in events)


def tell_comparison(*, session: Session, comparison: Comparison) -> list[NotificationOutbox]:
    """Queue a pull request's comparison verdict to the subscriptions that want it."""
    if not listening(session=session, event=NotificationEvent.PR_VERDICT):
        return []
    return notify(session=session, notice=comparison_notice(session=session, comparison=comparison))


def queue_delivery(
    *, session: Session, subscription: NotificationSubscription, notice: Notice
) -> NotificationOutbox | None:
    """One outbox row; ``None`` when the subscription was told about this ``dedupe`` key already."""
    if notice.dedupe is not None and session.scalar(
        select(NotificationOutbox.id).where(
            NotificationOutbox.subscription_id == subscription.id,
            NotificationOutbox.dedupe == notice.dedupe,
        )
    ):
        return None
    row = NotificationOutbox(
        subscription_id=subscription.id,
        event=notice.event,
        subject_kind=notice.subject_kind,
        subject_id=notice.subject_id,
        dedupe=notice.dedupe,
        delivery=str(uuid.uuid4()),
        payload=notice.payload(),
        attempts=0,
    )
    try:
        with session.begin_nested():  # a concurrent twin loses here, not the caller's transaction
            session.add(row)
    except IntegrityError:
        logger.info("notification %s to subscription %d queued already", notice.dedupe, subscription.id)
        return None
    return row


def case_scope(session: Session, cases: Sequence[Case], hardware: Sequence[str]) -> Scope:
    """The scope of events about these cases on these hardware kinds."""
    models = {name for case in cases for name in (case.slug, case.model, case.model_family) if name}
    repository_ids = {case.repository_id for case in cases if case.repository_id is not None}
    repository = None
    if len(repository_ids) == 1:
        repository = session.scalar(select(Repository.name).where(Repository.id == repository_ids.pop()))
    return Scope(models=frozenset(models), hardware=frozenset(hardware), repository=repository)


def comparison_notice(*, session: Session, comparison: Comparison) -> Notice:
    """A pull request's comparison reached its verdict: one line per case and hardware kind."""
    results = sorted(comparison.results, key=lambda result: (result.case.slug, result.hardware_kind.name))
    verdicts = sorted({result.verdict.value for result in results})
    lines = [_result_line(result) for result in results]
    pr = f"#{comparison.pr_number}" if comparison.pr_number else f"comparison {comparison.id}"
    repository = comparison.github_repository or session.scalar(
        select(Repository.name).where(Repository.id == comparison.repository_id)
    )
    scope = case_scope(session, [result.case for result in results], [r.hardware_kind.name for r in results])
    return Notice(
        event=NotificationEvent.PR_VERDICT,
        subject_kind=NotificationSubject.COMPARISON,
        subject_id=comparison.id,
        title=f"{repository} {pr}: {comparison.state.value}, {', '.join(verdicts) or 'no result'}",
        lines=tuple(lines),
        path=f"/comparisons/{comparison.id}",
        details={
            "comparison_id": comparison.id,
            "repository": repository,
            "pr_number": comparison.pr_number,
            "pr_url": comparison.pr_url,
            "head_sha": comparison.head_sha,
            "state": comparison.state.value,
            "results": [
                {
                    "case": result.case.slug,
                    "hardware": result.hardware_kind.name,
                    "verdict": result.verdict.value,
                    "change_pct": result.change_pct,
                    "ci_pct": [result.ci_low_pct, result.ci_high_pct],
                    "output": result.output_status.value if result.output_status is not None else None,
                }
                for result in results
            ],
        },
        scope=Scope(models=scope.models, hardware=scope.hardware, repository=repository),
        dedupe=f"comparison:{comparison.id}:verdict",
    )


def _result_line(result: Any) -> str:
    change = "" if result.change_pct is None else f" {result.change_pct:+.1f} %"
    if result.ci_low_pct is not None and result.ci_high_pct is not None:
        change += f" [{result.ci_low_pct:+.1f}, {result.ci_high_pct:+.1f}] %"
    output = f", output {result.output_status.value}" if result.output_status is not None else ""
    return f"`{result.case.slug}` on {result.hardware_kind.name}: {result.verdict.value}{change}{output}"


@dataclass(frozen=True)
class NightlyFacts:
    """What a nightly summary says: what ran, what changed, what is open, what got fixed."""

    jobs_by_state: dict[str, int]
    failed: int
    changed: list[str]  # one line per alert created since the nightly
    open_alerts: int
    fixed: list[str]  # one line per alert fixed since the nightly before


def nightly_notice(*, session: Session, run: NightlyRun, facts: NightlyFacts) -> Notice:
    """One nightly's summary."""
    when = (run.scheduled_for or run.fired_at).strftime("%Y-%m-%d %H:%M UTC")
    repository = (
        session.scalar(select(Repository.name).where(Repository.id == run.repository_id))
        if run.repository_id is not None
        else None
    )
    if run.error is not None:
        lines = [f"did not run: {run.error}"]
    else:
        jobs = ", ".join(f"{count} {state}" for state, count in sorted(facts.jobs_by_state.items()))
        lines = [f"ran: {(run.commit_sha or '')[:10]} on {run.branch}: {jobs or 'no jobs'}"]
    lines.append(f"changed: {len(facts.changed)}")
    lines += [f"• {line}" for line in facts.changed[:10]]
    lines.append(f"still open: {facts.open_alerts}")
    lines.append(f"fixed: {len(facts.fixed)}")
    lines += [f"• {line}" for line in facts.fixed[:10]]
    return Notice(
        event=NotificationEvent.NIGHTLY_SUMMARY,
        subject_kind=NotificationSubject.NIGHTLY_RUN,
        subject_id=run.id,
        title=f"Nightly {run.schedule} for {when}",
        lines=tuple(lines),
        path=f"/nights/{run.id}",
        details={
            "nightly_run_id": run.id,
            "schedule": run.schedule,
            "commit": run.commit_sha,
            "error": run.error,
            "jobs": facts.jobs_by_state,
            "failed_jobs": facts.failed,
            "changed": facts.changed,
            "open_alerts": facts.open_alerts,
            "fixed": facts.fixed,
        },
        scope=Scope(repository=repository),
        dedupe=f"nightly:{run.id}",
    )
