"""What a pull request shows of its comparison: the one comment, edited in place, and the commit
status on the measured head. Queued in the outbox whenever the comparison moves."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.labels import ResultOutcome, comparison_label
from tracker.enums import ComparisonState, OutboxKind, OutputStatus, Verdict
from tracker.github import outbox
from tracker.models import Comparison, GithubOutbox

OPEN_STATES = (ComparisonState.PENDING, ComparisonState.RUNNING)
MAX_DESCRIPTION = 140  # characters GitHub keeps of a commit status' description


def comparison_changed(*, session: Session, comparison: Comparison) -> None:
    """Queue the comment update and commit status of a PR comparison after it changed."""
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
        state, description = commit_status(comparison)
        payload = {"state": state, "description": description}
        waiting = outbox.pending(session=session, comparison_id=comparison.id, kind=OutboxKind.STATUS)
        if waiting:
            waiting[-1].payload = payload  # not sent yet: send the newest state instead
        elif _last_status(session, comparison.id) != payload:
            outbox.queue(
                session=session,
                kind=OutboxKind.STATUS,
                repository=repository,
                target=comparison.head_sha,
                payload=payload,
                comparison_id=comparison.id,
            )


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


def _last_status(session: Session, comparison_id: int) -> dict[str, Any] | None:
    row = session.scalar(
        select(GithubOutbox)
        .where(GithubOutbox.comparison_id == comparison_id, GithubOutbox.kind == OutboxKind.STATUS)
        .order_by(GithubOutbox.id.desc())
        .limit(1)
    )
    return dict(row.payload) if row is not None else None
