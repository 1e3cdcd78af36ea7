"""What a pull request shows of its comparison: the one comment, edited in place, the commit
status on the measured head, and in App mode its check run there (:mod:`tracker.github.checks`).
Queued in the outbox whenever the comparison moves.

Several comparisons can measure one head (a ``/perf`` per case, a re-run); the head has one status
(``settings.github_status_context``) that stands for all of them (:func:`head_status`): ``pending``
while any runs, else the worst of those not cancelled (``failure``, then ``error``, then
``success``); ``error`` only when every one was cancelled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.labels import ResultOutcome, comparison_label
from tracker.enums import ComparisonState, OutboxKind, OutputStatus, Verdict
from tracker.github import checks, outbox
from tracker.models import Comparison, GithubOutbox

OPEN_STATES = (ComparisonState.PENDING, ComparisonState.RUNNING)
MAX_DESCRIPTION = 140  # characters GitHub keeps of a commit status' description


def comparison_changed(
    *,
    session: Session,
    comparison: Comparison,
    check_run: bool = False,
    installation_id: int | None = None,
) -> None:
    """Queue the comment update and commit status of a PR comparison after it changed, and its
    check run's (:mod:`tracker.github.checks`) when it has one, or ``check_run`` asks for one (App
    mode: a new comparison's check run starts ``queued``; ``installation_id``: the App's installation
    the request came through)."""
    if comparison.pr_number is None or not comparison.github_repository:
        return
    repository = comparison.github_repository
    if not outbox.pending(session=session, comparison_id=comparison.id, kind=OutboxKind.COMMENT):
        outbox.queue(
            session=session,
            kind=OutboxKind.COMMENT,
            repository=repository,
            target=comparison.pr_number,
            comparison_id=comparison.id,
        )
    if comparison.head_sha:
        _queue_head_status(session=session, repository=repository, head_sha=comparison.head_sha)
        if check_run or has_check_run(session, comparison):
            queue_check(session=session, comparison=comparison, installation_id=installation_id)


def has_check_run(session: Session, comparison: Comparison) -> bool:
    """Whether the comparison has a check run (created, or queued to be: :mod:`tracker.github.checks`)."""
    if comparison.github_check_run_id is not None:
        return True
    found = session.scalar(
        select(GithubOutbox.id)
        .where(GithubOutbox.kind == OutboxKind.CHECK, GithubOutbox.comparison_id == comparison.id)
        .limit(1)
    )
    return found is not None


def queue_check(*, session: Session, comparison: Comparison, installation_id: int | None = None) -> None:
    """Queue the check run's create or edit for the comparison's current state: into the row not
    claimed yet when there is one, else a new row unless the last one said the same."""
    if not comparison.github_repository or not comparison.head_sha:
        return
    payload: dict[str, Any] = {
        "status": checks.check_status(comparison),
        "rounds": checks.rounds_done(comparison),
    }
    rows = list(
        session.scalars(
            select(GithubOutbox)
            .where(GithubOutbox.kind == OutboxKind.CHECK, GithubOutbox.comparison_id == comparison.id)
            .order_by(GithubOutbox.id)
        )
    )
    if installation_id is None and rows:
        installation_id = rows[-1].payload.get("installation_id")
    if installation_id is not None:
        payload["installation_id"] = installation_id
    waiting = [row for row in rows if row.done_at is None and row.dead_at is None]
    if waiting and waiting[-1].attempts == 0 and waiting[-1].next_attempt_at is None:
        waiting[-1].payload = payload  # not claimed yet: it sends the newest state
    elif not rows or rows[-1].payload != payload:
        outbox.queue(
            session=session,
            kind=OutboxKind.CHECK,
            repository=comparison.github_repository,
            target=comparison.head_sha,
            payload=payload,
            comparison_id=comparison.id,
        )


def _queue_head_status(*, session: Session, repository: str, head_sha: str) -> None:
    """Queue the head's status as its comparisons now make it, unless it is what was sent last."""
    on_head = list(
        session.scalars(
            select(Comparison)
            .where(Comparison.github_repository == repository, Comparison.head_sha == head_sha)
            .order_by(Comparison.id)
        )
    )
    state, description, deciding = head_status(on_head)
    payload = {"state": state, "description": description}
    rows = _status_rows(session, repository, head_sha)
    waiting = [row for row in rows if row.done_at is None and row.dead_at is None]
    if waiting:
        waiting[-1].payload = payload  # not sent yet: send the newest state instead
        waiting[-1].comparison_id = deciding.id
    elif not rows or rows[-1].payload != payload or rows[-1].comparison_id != deciding.id:
        outbox.queue(
            session=session,
            kind=OutboxKind.STATUS,
            repository=repository,
            target=head_sha,
            payload=payload,
            comparison_id=deciding.id,
        )


def head_status(comparisons: Sequence[Comparison]) -> tuple[str, str, Comparison]:
    """The commit status (state, description) of a head measured by ``comparisons`` (oldest first),
    and the comparison its link shows: the newest running one, else the one that decides the state."""
    each = [(commit_status(comparison), comparison) for comparison in comparisons]
    if len(each) == 1:
        (state, description), comparison = each[0]
        return state, description, comparison
    running = [comparison for (state, _), comparison in each if state == "pending"]
    if running:
        return "pending", f"{len(running)} of {len(each)} perf comparisons of this head running", running[-1]
    finished = [item for item in each if item[1].state is not ComparisonState.CANCELLED] or each
    (state, description), comparison = min(reversed(finished), key=lambda item: _SEVERITY[item[0][0]])
    return state, description, comparison


_SEVERITY = {"failure": 0, "error": 1, "success": 2}


def commit_status(comparison: Comparison) -> tuple[str, str]:
    """The commit status (state, description) that stands for a comparison now."""
    verdicts = [result.verdict for result in comparison.results]
    if comparison.state in OPEN_STATES:
        done = sum(1 for verdict in verdicts if verdict is not Verdict.PENDING)
        return "pending", f"perf comparison {comparison.id}: {done} of {len(verdicts)} results in"
    if comparison.state is ComparisonState.CANCELLED:
        return "error", f"perf comparison {comparison.id} was cancelled"
    if comparison.state is ComparisonState.FAILED:
        return "error", f"perf comparison {comparison.id} failed: nothing measured"
    changed = output_changed(comparison)
    if changed:
        return "failure", changed
    regressions = sum(1 for verdict in verdicts if verdict is Verdict.REGRESSION)
    if regressions:
        return "failure", f"{regressions} regression(s) beyond threshold"
    improvements = sum(1 for verdict in verdicts if verdict is Verdict.IMPROVEMENT)
    return "success", f"no regression ({improvements} improvement(s), {len(verdicts)} results)"


def output_changed(comparison: Comparison) -> str:
    """A finished comparison's status description when an output changed beyond its tolerance
    (``faster, but the output changed (PSNR 27.1 dB)``), else ``""``."""
    results = comparison.results
    changed = [result for result in results if result.output_status is OutputStatus.CHANGED]
    if not changed:
        return ""
    label = comparison_label(comparison.state, [ResultOutcome(r.verdict, r.output_status) for r in results])
    lowest = min((r.output_psnr_db for r in changed if r.output_psnr_db is not None), default=None)
    psnr = f"PSNR {lowest:.1f} dB" if lowest is not None else ""
    if len(results) > 1:
        psnr = f"{len(changed)} of {len(results)} results" + (f", lowest {psnr}" if psnr else "")
    description = f"{label} ({psnr})" if psnr else label
    return description if len(description) <= MAX_DESCRIPTION else description[: MAX_DESCRIPTION - 1] + "…"


def _status_rows(session: Session, repository: str, head_sha: str) -> list[GithubOutbox]:
    """The status rows of a head, oldest first."""
    return list(
        session.scalars(
            select(GithubOutbox)
            .where(
                GithubOutbox.kind == OutboxKind.STATUS,
                GithubOutbox.repository == repository,
                GithubOutbox.target == head_sha,
            )
            .order_by(GithubOutbox.id)
        )
    )
