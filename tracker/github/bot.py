"""What the bot does with a delivery: decide (reading GitHub), then act (writing the database).

:func:`decide` runs on a read session and makes every GitHub call the delivery needs (permission,
pull request, merge base, changed files); :func:`act` then writes the outcome in one short
transaction: the comparison, its supersessions and cancellations, and the outbox rows of every
reply, reaction, comment and commit status (sent after commit). No GitHub call happens while the
write transaction is open.

Who may start measurements (see docs/operations.md, "Trust model"):

- a ``/perf`` comment: its author needs write access (or a place on the allow list), checked for
  each command, and the PR must be open; the PR's head when the comment arrived is pinned and
  measured, even when GitHub's hiccups delay the bot past a later push (:mod:`heads`);
- a push (re-run of the last command) or the perf label: the pusher (or labeller) needs write
  access, checked for each new head; a push to a fork's pull request is never measured on its
  own: a maintainer comments ``/perf`` (or adds the label) for each head;
- a check run's "Re-run" (or re-request, App mode): its sender needs write access, checked for each
  request (:mod:`rerun`); the comparison's command is measured again on the check run's head;
- after ``/perf cancel`` (or a cancellation on the dashboard) pushes are not measured until the
  next ``/perf``; closing the PR cancels its running comparison.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.creation import create_comparison, resolve_candidate
from tracker.comparisons.progress import cancel_comparison
from tracker.enums import ComparisonState, OutboxKind
from tracker.errors import InvalidInput, PerftrackError
from tracker.github import outbox
from tracker.github.access import may_run
from tracker.github.client import GithubClient
from tracker.github.commands import HELP, CommandError, find_command, parse_command
from tracker.github.events import CheckRunEvent, CommentEvent, Event, PullRequestEvent
from tracker.github.heads import head_when_asked
from tracker.github.plan import ComparisonPlan, plan_comparison
from tracker.github.render import code
from tracker.github.rerun import Refusal, plan_rerun
from tracker.github.status import OPEN_STATES, comparison_changed
from tracker.models import Comparison, Repository, utcnow
from tracker.settings import Settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reply:
    """Answer on the pull request (and react to the comment, when there is one)."""

    outcome: str
    body: str | None = None
    reaction: str | None = None


@dataclass(frozen=True)
class Start:
    """Create the planned comparison, superseding the PR's open ones (a push or label re-run)."""

    plan: ComparisonPlan
    author: str
    max_rounds: int  # the cap on rounds added while inconclusive (settings.github_max_rounds)
    why: str | None = None  # None: a comment asked; else "push", "label" or "check run"
    rerun_of: int | None = None  # the comparison a check run's re-run measures again
    pr_url: str | None = None  # the PR's page, when the event does not name it
    check_run: bool = False  # App mode: the comparison gets a check run (tracker.github.checks)


@dataclass(frozen=True)
class Cancel:
    """Cancel the PR's open comparisons: ``/perf cancel`` (newest only) or the PR closed (all)."""

    reason: str
    every_open: bool


Decision = Reply | Start | Cancel


def is_own_comment(event: CommentEvent, *, settings: Settings, login: str | None) -> bool:
    """Whether a comment is the bot's own (or another bot's): never read as a command."""
    if event.author_is_bot:
        return True
    if event.via_app_id is not None and event.via_app_id == settings.github_app_id:
        return True
    return login is not None and event.author.lower() == login.lower()


def decide(
    *,
    session: Session,
    settings: Settings,
    client: GithubClient,
    event: Event,
    delivery_row: int | None = None,
) -> Decision:
    """What to do about ``event`` (stored as delivery row ``delivery_row``); reads the database and
    GitHub, writes nothing.

    Raises :class:`~tracker.github.client.GithubError` when GitHub does not answer as it should
    (the delivery is tried again later, or given up with the reason when GitHub refuses perftrack).
    """
    if event.installation_id is not None:
        client.remember_installation(event.repository, event.installation_id)
    decision = _decide(
        session=session, settings=settings, client=client, event=event, delivery_row=delivery_row
    )
    return replace(decision, check_run=client.is_app) if isinstance(decision, Start) else decision


def _decide(
    *, session: Session, settings: Settings, client: GithubClient, event: Event, delivery_row: int | None
) -> Decision:
    if isinstance(event, CommentEvent):
        return _decide_comment(
            session=session, settings=settings, client=client, event=event, delivery_row=delivery_row
        )
    if isinstance(event, CheckRunEvent):
        found = plan_rerun(session=session, settings=settings, client=client, event=event)
        if isinstance(found, Refusal):
            return Reply(found.outcome, found.body)
        rounds = settings.github_max_rounds
        return Start(found.plan, event.sender, rounds, "check run", found.comparison_id, found.pr_url)
    return _decide_pull_request(session=session, settings=settings, client=client, event=event)


def _decide_comment(
    *,
    session: Session,
    settings: Settings,
    client: GithubClient,
    event: CommentEvent,
    delivery_row: int | None,
) -> Decision:
    line = find_command(event.body)
    if line is None:
        return Reply("ignored: no /perf command")
    if is_own_comment(event, settings=settings, login=client.own_login()):
        return Reply("ignored: a comment of the bot itself")
    if not may_run(settings=settings, client=client, repository=event.repository, login=event.author):
        return Reply(
            f"refused: {event.author} may not run /perf",
            f"Sorry @{event.author}, `/perf` needs write access to this repository "
            "(or a place on perftrack's allow list). A maintainer can run it for you.",
        )
    if not event.pr_open:
        return Reply(
            "refused: the pull request is closed",
            f"@{event.author} this pull request is closed; reopen it to measure it.",
            "confused",
        )
    try:
        command = parse_command(line)
    except CommandError as error:
        return Reply(
            f"invalid command: {error}", f"@{event.author} I could not read that command: {error}\n\n{HELP}"
        )
    if command.action == "help":
        return Reply("help", HELP, "+1")
    if command.action == "cancel":
        return Cancel(reason=f"cancelled by @{event.author} on GitHub", every_open=False)
    try:
        plan = plan_comparison(
            session=session,
            client=client,
            repository=event.repository,
            pr_number=event.pr_number,
            command=command,
            head_sha=head_when_asked(session=session, event=event, delivery_row=delivery_row),
        )
    except InvalidInput as error:  # a CommandError too
        message = error.message
        return Reply(f"rejected: {message}", f"@{event.author} {message}", "confused")
    return Start(plan=plan, author=event.author, max_rounds=settings.github_max_rounds)


def _decide_pull_request(
    *, session: Session, settings: Settings, client: GithubClient, event: PullRequestEvent
) -> Decision:
    if event.action == "closed":
        return Cancel(reason="the pull request was closed", every_open=True)
    label = settings.github_perf_label
    if event.action == "labeled" and (not label or event.label != label):
        return Reply("ignored: not the perf label")
    previous = _latest(session, event)
    if _measured(previous, event.head_sha, why="label" if event.action == "labeled" else "push"):
        return Reply("ignored: this head was measured already")
    if event.action == "labeled":
        text, why = "/perf", "label"
    elif previous is not None and (
        previous.state is ComparisonState.CANCELLED or previous.reruns_stopped_at is not None
    ):
        return Reply("ignored: measuring was cancelled on this pull request; /perf starts it again")
    elif settings.github_rerun_on_push and previous is not None:
        text, why = previous.command or "/perf", "push"
    elif label and label in event.labels:
        text, why = "/perf", "label"
    else:
        return Reply("ignored: the pull request never asked for /perf")
    head = event.head_sha[:10]
    if event.action == "synchronize" and event.from_fork:
        return Reply(
            f"refused: {head} is a fork's push; a maintainer's /perf measures it",
            f"New commits ({code(head)}) came from a fork, so perftrack does not build them on its own. "
            "A maintainer can comment `/perf` to measure this head.",
        )
    if not may_run(settings=settings, client=client, repository=event.repository, login=event.sender):
        return Reply(
            f"refused: {event.sender} may not start /perf by {why}",
            f"The {why} by @{event.sender} does not start measurements: that needs write access to this "
            f"repository. A maintainer can comment `/perf` to measure {code(head)}.",
        )
    try:
        plan = plan_comparison(
            session=session,
            client=client,
            repository=event.repository,
            pr_number=event.pr_number,
            command=parse_command(text),
            head_sha=event.head_sha,
        )
    except InvalidInput as error:  # a CommandError too
        message = error.message
        return Reply(
            f"rejected: {message}", f"perftrack could not re-run {code(text)} after the {why}: {message}"
        )
    return Start(plan=plan, author=event.sender, max_rounds=settings.github_max_rounds, why=why)


def act(*, session: Session, event: Event, decision: Decision) -> str:
    """Write what ``decision`` says (in the caller's transaction); returns the outcome for the log."""
    if isinstance(decision, Reply):
        if decision.body is not None:
            reply(session, event, decision.body)
        if decision.reaction is not None:
            _react(session, event, decision.reaction)
        return decision.outcome
    if isinstance(decision, Cancel):
        return _cancel(session=session, event=event, decision=decision)
    return _start(session=session, event=event, decision=decision)


def _start(*, session: Session, event: Event, decision: Start) -> str:
    plan = decision.plan
    rerun = decision.rerun_of is not None
    if decision.why and not rerun and _measured(_latest(session, event), plan.head_sha, why=decision.why):
        return "ignored: this head was measured already"  # another delivery got here first
    # A push or label replaces the measurement of the old head, a re-run the comparison it repeats;
    # a comment adds one beside it.
    replaced = _open(session, event) if decision.why is not None else []
    if rerun:
        replaced = [old for old in replaced if old.id == decision.rerun_of]
    reason = f"superseded: the pull request moved to {plan.head_sha[:10]}"
    if rerun:
        reason = f"superseded: re-run from its check run by @{decision.author}"
    superseded = [cancel_comparison(session=session, comparison_id=old.id, reason=reason) for old in replaced]
    for old in superseded:
        comparison_changed(session=session, comparison=old)
    repository = session.get(Repository, plan.repository_id)
    if repository is None:
        raise PerftrackError(f"repository {plan.repository_id} is gone")
    base = resolve_candidate(
        session=session, repository=repository, sha=plan.merge_base, patches=list(plan.base_patches)
    )
    head = resolve_candidate(
        session=session, repository=repository, sha=plan.merge_base, patches=list(plan.head_patches)
    )
    comparison = create_comparison(
        session=session,
        base=base,
        head=head,
        cases=list(plan.cases),
        hardware=list(plan.hardware) if plan.hardware is not None else None,
        rounds=plan.rounds,
        max_rounds=max(plan.rounds, decision.max_rounds),
        requested_by=decision.author,
        pr_number=event.pr_number,
        pr_url=event.pr_url or decision.pr_url,
        command=plan.command,
    )
    comparison.github_repository = event.repository
    comparison.head_sha = plan.head_sha
    comparison.case_selection = plan.selection + (f" (re-run on {decision.why})" if decision.why else "")
    session.flush()
    _react(session, event, "eyes")
    comparison_changed(
        session=session,
        comparison=comparison,
        check_run=decision.check_run,
        installation_id=event.installation_id,
    )
    outcome = f"comparison {comparison.id} created" + (f" on {decision.why}" if decision.why else "")
    return outcome + (f", {len(superseded)} superseded" if superseded else "")


def _cancel(*, session: Session, event: Event, decision: Cancel) -> str:
    targets = _open(session, event)
    if not decision.every_open:
        targets = targets[-1:]
    if not targets:
        latest = _latest(session, event)
        stopped = (
            latest is not None
            and latest.state is not ComparisonState.CANCELLED
            and latest.reruns_stopped_at is None
        )
        if stopped and latest is not None:
            latest.reruns_stopped_at = utcnow()
        if isinstance(event, CommentEvent):
            reply(
                session,
                event,
                f"@{event.author} there is no running comparison on this pull request to cancel"
                + ("; pushes will not be measured until the next `/perf`." if stopped else "."),
            )
            if stopped:
                _react(session, event, "+1")
        return "cancel: nothing running; re-runs on push stopped" if stopped else "cancel: nothing to cancel"
    cancelled: list[str] = []
    for target in targets:
        try:
            comparison = cancel_comparison(session=session, comparison_id=target.id, reason=decision.reason)
        except PerftrackError as error:
            if isinstance(event, CommentEvent):
                reply(session, event, f"@{event.author} {error}")
            return f"cancel failed: {error}"
        comparison_changed(session=session, comparison=comparison)
        cancelled.append(str(comparison.id))
    _react(session, event, "+1")
    return f"comparison {', '.join(cancelled)} cancelled"


def _measured(previous: Comparison | None, head_sha: str, *, why: str) -> bool:
    """Whether ``head_sha`` needs no new comparison for a push or label (``why``): the PR's latest
    comparison is of that head, and was not stopped (re-adding the label after a cancel restarts)."""
    if previous is None or previous.head_sha != head_sha:
        return False
    stopped = previous.state is ComparisonState.CANCELLED or previous.reruns_stopped_at is not None
    return not (why == "label" and stopped)


def _latest(session: Session, event: Event) -> Comparison | None:
    return session.scalar(
        select(Comparison)
        .where(Comparison.pr_number == event.pr_number, Comparison.github_repository == event.repository)
        .order_by(Comparison.id.desc())
        .limit(1)
    )


def _open(session: Session, event: Event) -> list[Comparison]:
    return list(
        session.scalars(
            select(Comparison)
            .where(
                Comparison.pr_number == event.pr_number,
                Comparison.github_repository == event.repository,
                Comparison.state.in_(OPEN_STATES),
            )
            .order_by(Comparison.id)
        )
    )


def reply(session: Session, event: Event, body: str) -> None:
    """Queue a new comment on the event's pull request."""
    outbox.queue(
        session=session,
        kind=OutboxKind.REPLY,
        repository=event.repository,
        target=event.pr_number,
        payload=_with_installation({"body": body}, event),
    )


def _react(session: Session, event: Event, content: str) -> None:
    if not isinstance(event, CommentEvent) or event.comment_id is None:
        return
    outbox.queue(
        session=session,
        kind=OutboxKind.REACTION,
        repository=event.repository,
        target=event.comment_id,
        payload=_with_installation({"content": content}, event),
    )


def _with_installation(payload: dict[str, Any], event: Event) -> dict[str, Any]:
    if event.installation_id is not None:
        payload["installation_id"] = event.installation_id
    return payload


__all__ = ["Cancel", "Decision", "Reply", "Start", "act", "decide", "is_own_comment", "reply"]
