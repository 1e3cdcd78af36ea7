"""What a ``/perf`` comment does, and what the bot reports as a comparison moves on.

A command from a user with write access (or on the allow list) resolves the PR's head and its merge
base with the target branch, and compares ``merge base + stacked PRs`` (base) with ``merge base +
stacked PRs + this PR`` (head): the head arm measures exactly this PR's change. Reads from GitHub
happen inline; every write (reaction, reply, the comparison's comment, the commit status) is queued
in the outbox in the same transaction and sent after commit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.catalog import list_current_cases, list_hardware_kinds
from tracker.comparisons import cancel_comparison, create_comparison, resolve_candidate
from tracker.errors import InvalidInput, PerftrackError
from tracker.github import outbox
from tracker.github.client import GithubClient, GithubError
from tracker.github.commands import (
    HELP,
    CommandError,
    PerfCommand,
    check_hardware,
    expand_cases,
    find_command,
    parse_command,
)
from tracker.github.render import code
from tracker.models import Case, Comparison, ComparisonState, GithubOutbox, Repository, Verdict
from tracker.pathglob import select_cases
from tracker.settings import Settings

logger = logging.getLogger(__name__)

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
DEFAULT_ROUNDS = 2
FILES_PER_PAGE = 100
MAX_FILE_PAGES = 30  # GitHub lists at most 3000 files of a pull request
_OPEN = (ComparisonState.PENDING, ComparisonState.RUNNING)


@dataclass(frozen=True)
class CommentEvent:
    """The parts of an ``issue_comment`` webhook the bot uses."""

    repository: str
    pr_number: int
    pr_url: str
    comment_id: int | None  # None: the event is a push or a label, not a comment
    author: str
    author_is_bot: bool
    body: str
    installation_id: int | None


def comment_event(payload: dict[str, Any]) -> CommentEvent | None:
    """The event of a new comment on a pull request; ``None`` for other comments and actions."""
    issue = payload.get("issue") or {}
    if payload.get("action") != "created" or not issue.get("pull_request"):
        return None
    comment = payload["comment"]
    installation = payload.get("installation") or {}
    return CommentEvent(
        repository=str(payload["repository"]["full_name"]),
        pr_number=int(issue["number"]),
        pr_url=str(issue.get("html_url") or issue["pull_request"].get("html_url", "")),
        comment_id=int(comment["id"]),
        author=str(comment["user"]["login"]),
        author_is_bot=comment["user"].get("type") == "Bot",
        body=str(comment.get("body") or ""),
        installation_id=int(installation["id"]) if installation.get("id") is not None else None,
    )


def handle_comment(*, session: Session, settings: Settings, client: GithubClient, event: CommentEvent) -> str:
    """Carry out the ``/perf`` command of a PR comment, if any; return what was done (for the log)."""
    line = find_command(event.body)
    if line is None or event.author_is_bot:
        return "ignored: no /perf command"
    if event.installation_id is not None:
        client.remember_installation(event.repository, event.installation_id)
    if not _may_run(settings=settings, client=client, event=event):
        _reply(
            session,
            event,
            f"Sorry @{event.author}, `/perf` needs write access to this repository "
            "(or a place on perftrack's allow list). A maintainer can run it for you.",
        )
        return f"refused: {event.author} may not run /perf"
    try:
        command = parse_command(line)
    except CommandError as error:
        _reply(session, event, f"@{event.author} I could not read that command: {error}\n\n{HELP}")
        return f"invalid command: {error}"
    if command.action == "help":
        _reply(session, event, HELP)
        _react(session, event, "+1")
        return "help"
    if command.action == "cancel":
        return _cancel(session=session, event=event)
    try:
        comparison = _start(session=session, client=client, event=event, command=command)
    except (CommandError, InvalidInput) as error:
        message = error.message if isinstance(error, InvalidInput) else str(error)
        _reply(session, event, f"@{event.author} {message}")
        _react(session, event, "confused")
        return f"rejected: {message}"
    return f"comparison {comparison.id} created"


@dataclass(frozen=True)
class PullRequestEvent:
    """The parts of a ``pull_request`` webhook the bot uses (``synchronize`` and ``labeled``)."""

    action: str
    repository: str
    pr_number: int
    pr_url: str
    head_sha: str
    sender: str
    labels: frozenset[str]
    label: str | None  # the label just added, for ``labeled``
    installation_id: int | None


def pull_request_event(payload: dict[str, Any]) -> PullRequestEvent | None:
    """A ``pull_request`` delivery the bot may act on, or ``None``."""
    action = str(payload.get("action") or "")
    pull = payload.get("pull_request")
    if action not in ("synchronize", "labeled") or not isinstance(pull, dict):
        return None
    if pull.get("state", "open") != "open":
        return None
    installation = payload.get("installation") or {}
    return PullRequestEvent(
        action=action,
        repository=str(payload["repository"]["full_name"]),
        pr_number=int(pull["number"]),
        pr_url=str(pull.get("html_url") or ""),
        head_sha=str(pull["head"]["sha"]),
        sender=str((payload.get("sender") or {}).get("login") or ""),
        labels=frozenset(str(label.get("name", "")) for label in pull.get("labels") or []),
        label=str((payload.get("label") or {}).get("name") or "") or None,
        installation_id=int(installation["id"]) if installation.get("id") is not None else None,
    )


def handle_pull_request(
    *, session: Session, settings: Settings, client: GithubClient, event: PullRequestEvent
) -> str:
    """Re-measure a pull request after a push (when it asked before, or carries the perf label), or
    measure it when the perf label is added. Comparisons of the old head still running are cancelled."""
    label = settings.github_perf_label
    if event.installation_id is not None:
        client.remember_installation(event.repository, event.installation_id)
    if event.action == "labeled" and (not label or event.label != label):
        return "ignored: not the perf label"
    previous = session.scalar(
        select(Comparison)
        .where(Comparison.pr_number == event.pr_number, Comparison.github_repository == event.repository)
        .order_by(Comparison.id.desc())
        .limit(1)
    )
    if previous is not None and previous.head_sha == event.head_sha:
        return "ignored: this head was measured already"
    if event.action == "labeled":
        return _rerun(
            session=session, client=client, event=event, text="/perf", author=event.sender, why="label"
        )
    if settings.github_rerun_on_push and previous is not None:
        return _rerun(
            session=session,
            client=client,
            event=event,
            text=previous.command or "/perf",
            author=previous.requested_by,
            why="push",
        )
    if label and label in event.labels:
        return _rerun(
            session=session, client=client, event=event, text="/perf", author=event.sender, why="label"
        )
    return "ignored: the pull request never asked for /perf"


def _rerun(
    *, session: Session, client: GithubClient, event: PullRequestEvent, text: str, author: str, why: str
) -> str:
    as_comment = CommentEvent(
        repository=event.repository,
        pr_number=event.pr_number,
        pr_url=event.pr_url,
        comment_id=None,
        author=author,
        author_is_bot=False,
        body=text,
        installation_id=event.installation_id,
    )
    superseded = list(
        session.scalars(
            select(Comparison).where(
                Comparison.pr_number == event.pr_number,
                Comparison.github_repository == event.repository,
                Comparison.state.in_(_OPEN),
            )
        )
    )
    for old in superseded:
        cancelled = cancel_comparison(
            session=session,
            comparison_id=old.id,
            reason=f"superseded: the pull request moved to {event.head_sha[:10]}",
        )
        comparison_changed(session=session, comparison=cancelled)
    try:
        command = parse_command(text)
        comparison = _start(session=session, client=client, event=as_comment, command=command)
    except (CommandError, InvalidInput) as error:
        message = error.message if isinstance(error, InvalidInput) else str(error)
        _reply(session, as_comment, f"perftrack could not re-run {code(text)} after the {why}: {message}")
        return f"rejected: {message}"
    comparison.requested_by = author
    comparison.case_selection = f"{comparison.case_selection} (re-run on {why})"
    return f"comparison {comparison.id} created on {why}" + (
        f", {len(superseded)} superseded" if superseded else ""
    )


def comparison_changed(*, session: Session, comparison: Comparison) -> None:
    """Queue the comment update and commit status of a PR comparison after it changed."""
    if comparison.pr_number is None or not comparison.github_repository:
        return
    repository = comparison.github_repository
    if not outbox.pending(session=session, comparison_id=comparison.id, kind="comment"):
        outbox.queue(
            session=session,
            kind="comment",
            repository=repository,
            target=comparison.pr_number,
            comparison_id=comparison.id,
        )
    if comparison.head_sha:
        state, description = commit_status(comparison)
        payload = {"state": state, "description": description}
        waiting = outbox.pending(session=session, comparison_id=comparison.id, kind="status")
        if waiting:
            waiting[-1].payload = payload  # not sent yet: send the newest state instead
        elif _last_status(session, comparison.id) != payload:
            outbox.queue(
                session=session,
                kind="status",
                repository=repository,
                target=comparison.head_sha,
                payload=payload,
                comparison_id=comparison.id,
            )


def commit_status(comparison: Comparison) -> tuple[str, str]:
    """The commit status (state, description) that stands for a comparison now."""
    verdicts = [result.verdict for result in comparison.results]
    if comparison.state in _OPEN:
        done = sum(1 for verdict in verdicts if verdict is not Verdict.PENDING)
        return "pending", f"perf comparison {comparison.id}: {done} of {len(verdicts)} results in"
    if comparison.state is ComparisonState.CANCELLED:
        return "error", f"perf comparison {comparison.id} was cancelled"
    if comparison.state is ComparisonState.FAILED:
        return "error", f"perf comparison {comparison.id} failed: nothing measured"
    regressions = sum(1 for verdict in verdicts if verdict is Verdict.REGRESSION)
    if regressions:
        return "failure", f"{regressions} regression(s) beyond threshold"
    improvements = sum(1 for verdict in verdicts if verdict is Verdict.IMPROVEMENT)
    return "success", f"no regression ({improvements} improvement(s), {len(verdicts)} results)"


def _last_status(session: Session, comparison_id: int) -> dict[str, Any] | None:
    row = session.scalar(
        select(GithubOutbox)
        .where(GithubOutbox.comparison_id == comparison_id, GithubOutbox.kind == "status")
        .order_by(GithubOutbox.id.desc())
        .limit(1)
    )
    return dict(row.payload) if row is not None else None


def _may_run(*, settings: Settings, client: GithubClient, event: CommentEvent) -> bool:
    allowed = {name.lower() for name in settings.github_allowed_users}
    if event.author.lower() in allowed:
        return True
    try:
        answer = client.request(
            "GET",
            f"/repos/{event.repository}/collaborators/{event.author}/permission",
            repository=event.repository,
        )
    except GithubError as error:
        if error.status == 404:  # not a collaborator
            return False
        raise
    names = {str(answer.get("permission", "")), str(answer.get("role_name", ""))}
    return bool(names & WRITE_PERMISSIONS)


def _start(
    *, session: Session, client: GithubClient, event: CommentEvent, command: PerfCommand
) -> Comparison:
    repository = tracked_repository(session=session, github_repository=event.repository)
    current = [case for case in list_current_cases(session=session) if case.repository_id == repository.id]
    if not current:
        raise CommandError(f"no case measures {event.repository} yet")
    if command.hardware:  # unknown names are refused before anything else is looked up
        check_hardware(command.hardware, [kind.name for kind in list_hardware_kinds(session=session)])
    pull = _pull(client, event.repository, event.pr_number)
    if command.cases:
        cases = expand_cases(command.cases, [case.slug for case in current])
        selection = "named in the command"
    else:
        files = _changed_files(client, event.repository, event.pr_number)
        eligible = [case for case in current if _runs_on_any(case, command.hardware)]
        if not eligible:
            raise CommandError(f"no case of {event.repository} runs on {', '.join(command.hardware)}")
        chosen = select_cases([(case.slug, case.paths) for case in eligible], files)
        cases, selection = chosen.chosen, chosen.describe(len(files), quote=code)
    hardware = _hardware(session=session, current=current, cases=cases, named=command.hardware)
    for number in command.stacked:
        if number == event.pr_number:
            raise CommandError(f"#{number} is this pull request; `with` names other pull requests")
        _pull(client, event.repository, number)
    head_sha = str(pull["head"]["sha"])
    compared = client.request(
        "GET",
        f"/repos/{event.repository}/compare/{pull['base']['ref']}...{head_sha}",
        repository=event.repository,
    )
    merge_base = str(compared["merge_base_commit"]["sha"])
    stacked = [f"refs/pull/{number}/head" for number in command.stacked]
    base = resolve_candidate(session=session, repository=repository, sha=merge_base, patches=stacked)
    head = resolve_candidate(
        session=session,
        repository=repository,
        sha=merge_base,
        patches=[*stacked, f"refs/pull/{event.pr_number}/head"],
    )
    rounds = command.rounds or DEFAULT_ROUNDS
    comparison = create_comparison(
        session=session,
        base=base,
        head=head,
        cases=cases,
        hardware=hardware,
        rounds=rounds,
        max_rounds=max(rounds, 8),
        requested_by=event.author,
        pr_number=event.pr_number,
        pr_url=event.pr_url,
        command=command.text,
    )
    comparison.github_repository = event.repository
    comparison.head_sha = head_sha
    comparison.case_selection = selection
    session.flush()
    _react(session, event, "eyes")
    comparison_changed(session=session, comparison=comparison)
    return comparison


def _hardware(
    *, session: Session, current: list[Case], cases: list[str], named: tuple[str, ...]
) -> list[str] | None:
    """The hardware kinds to pass on: each case runs on the named kinds it is set up for.

    A comparison takes one hardware list for all its cases, so the named kinds are narrowed to
    those the cases share; cases set up for different subsets of them are refused with the reason.
    """
    if not named:
        return None
    chosen = check_hardware(named, [kind.name for kind in list_hardware_kinds(session=session)])
    by_slug = {case.slug: case for case in current}
    subsets: dict[str, set[str]] = {}
    for slug in cases:
        runs_on = {entry.hardware_kind.name for entry in by_slug[slug].hardware}
        subset = runs_on & set(chosen)
        if not subset:
            raise CommandError(
                f"case `{slug}` does not run on {', '.join(chosen)}; it runs on {', '.join(sorted(runs_on))}"
            )
        subsets[slug] = subset
    if len({frozenset(subset) for subset in subsets.values()}) > 1:
        listing = "; ".join(f"`{slug}` on {', '.join(sorted(subset))}" for slug, subset in subsets.items())
        raise CommandError(f"the cases run on different hardware ({listing}); ask for them separately")
    shared = next(iter(subsets.values()))
    return [name for name in chosen if name in shared]


def _pull(client: GithubClient, repository: str, number: int) -> dict[str, Any]:
    try:
        pull: dict[str, Any] = client.request(
            "GET", f"/repos/{repository}/pulls/{number}", repository=repository
        )
    except GithubError as error:
        if error.status == 404:
            raise CommandError(f"pull request #{number} does not exist in {repository}") from None
        raise
    return pull


def _runs_on_any(case: Case, hardware: tuple[str, ...]) -> bool:
    wanted = {name.lower() for name in hardware}
    return not wanted or any(entry.hardware_kind.name.lower() in wanted for entry in case.hardware)


def _changed_files(client: GithubClient, repository: str, number: int) -> list[str]:
    """The paths a pull request touches (renames count by both names), page by page.

    GitHub lists at most 3000 files per pull request, 100 a page.
    """
    files: list[str] = []
    for page in range(1, MAX_FILE_PAGES + 1):
        answer = client.request(
            "GET",
            f"/repos/{repository}/pulls/{number}/files?per_page={FILES_PER_PAGE}&page={page}",
            repository=repository,
        )
        entries = answer if isinstance(answer, list) else []
        for entry in entries:
            files.append(str(entry["filename"]))
            if entry.get("previous_filename"):
                files.append(str(entry["previous_filename"]))
        if len(entries) < FILES_PER_PAGE:
            break
    return files


def tracked_repository(*, session: Session, github_repository: str) -> Repository:
    """The tracked repository a GitHub ``owner/name`` is (by its URL, else by its name)."""
    wanted = github_repository.lower()
    repositories = list(session.scalars(select(Repository).order_by(Repository.id)))
    for repository in repositories:
        url = repository.url.lower().removesuffix(".git").rstrip("/")
        if url.endswith(("/" + wanted, ":" + wanted)):
            return repository
    short = wanted.rsplit("/", 1)[-1]
    for repository in repositories:
        if repository.name.lower() == short:
            return repository
    known = ", ".join(repository.name for repository in repositories) or "none"
    raise CommandError(f"perftrack does not track {github_repository} (tracked: {known})")


def _cancel(*, session: Session, event: CommentEvent) -> str:
    open_comparison = session.scalar(
        select(Comparison)
        .where(
            Comparison.pr_number == event.pr_number,
            Comparison.github_repository == event.repository,
            Comparison.state.in_(_OPEN),
        )
        .order_by(Comparison.id.desc())
        .limit(1)
    )
    if open_comparison is None:
        _reply(
            session, event, f"@{event.author} there is no running comparison on this pull request to cancel."
        )
        return "cancel: nothing to cancel"
    try:
        comparison = cancel_comparison(
            session=session,
            comparison_id=open_comparison.id,
            reason=f"cancelled by @{event.author} on GitHub",
        )
    except PerftrackError as error:
        _reply(session, event, f"@{event.author} {error}")
        return f"cancel failed: {error}"
    _react(session, event, "+1")
    comparison_changed(session=session, comparison=comparison)
    return f"comparison {comparison.id} cancelled"


def _reply(session: Session, event: CommentEvent, body: str) -> None:
    outbox.queue(
        session=session,
        kind="reply",
        repository=event.repository,
        target=event.pr_number,
        payload=_with_installation({"body": body}, event),
    )


def _react(session: Session, event: CommentEvent, content: str) -> None:
    if event.comment_id is None:
        return
    outbox.queue(
        session=session,
        kind="reaction",
        repository=event.repository,
        target=event.comment_id,
        payload=_with_installation({"content": content}, event),
    )


def _with_installation(payload: dict[str, Any], event: CommentEvent) -> dict[str, Any]:
    if event.installation_id is not None:
        payload["installation_id"] = event.installation_id
    return payload
