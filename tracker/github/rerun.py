"""A comparison measured again from its check run: the "Re-run" action pressed, or the check run
re-requested on GitHub (:class:`~tracker.github.events.CheckRunEvent`).

The sender needs what a ``/perf`` comment's author needs (:func:`~tracker.github.access.may_run`,
asked of GitHub for each request): anyone else is refused and told on the pull request, and nothing
runs. The comparison is planned again from its own command on the head its check run is on, so the
cases a changed file list picks are picked again.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from tracker.errors import InvalidInput
from tracker.github.access import may_run
from tracker.github.client import GithubClient
from tracker.github.commands import parse_command
from tracker.github.events import CheckRunEvent
from tracker.github.plan import ComparisonPlan, plan_comparison
from tracker.models import Comparison
from tracker.settings import Settings


@dataclass(frozen=True)
class Refusal:
    """Nothing runs: the outcome for the log, and the reply on the pull request (``None``: none)."""

    outcome: str
    body: str | None = None


@dataclass(frozen=True)
class Rerun:
    """Measure ``comparison_id`` again as ``plan`` says."""

    plan: ComparisonPlan
    comparison_id: int
    pr_url: str


def plan_rerun(
    *, session: Session, settings: Settings, client: GithubClient, event: CheckRunEvent
) -> Rerun | Refusal:
    """What to do about a re-run asked for on a comparison's check run (reads GitHub, writes nothing)."""
    comparison = session.get(Comparison, event.comparison_id)
    if (
        comparison is None
        or (comparison.github_repository or "").lower() != event.repository.lower()
        or comparison.github_check_run_id != event.check_run_id
    ):
        return Refusal(f"ignored: check run {event.check_run_id} is no comparison's of {event.repository}")
    if not may_run(settings=settings, client=client, repository=event.repository, login=event.sender):
        return Refusal(
            f"refused: {event.sender} may not re-run comparison {comparison.id}",
            f"Sorry @{event.sender}, re-running perftrack's check (comparison {comparison.id}) needs "
            "write access to this repository (or a place on perftrack's allow list); nothing was "
            "started. A maintainer can press Re-run or comment `/perf`.",
        )
    try:
        plan = plan_comparison(
            session=session,
            client=client,
            repository=event.repository,
            pr_number=event.pr_number,
            command=parse_command(comparison.command or "/perf"),
            head_sha=event.head_sha,
        )
    except InvalidInput as error:  # a CommandError too
        message = error.message
        return Refusal(
            f"rejected: {message}",
            f"@{event.sender} perftrack could not re-run comparison {comparison.id}: {message}",
        )
    return Rerun(plan=plan, comparison_id=comparison.id, pr_url=comparison.pr_url or "")
