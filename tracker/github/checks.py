"""A PR comparison as a GitHub check run on its head (App mode only: GitHub's Checks API refuses
personal tokens, so token mode keeps to commit statuses, :mod:`tracker.github.status`).

The check run is created when the comparison is (``queued``), edited as its rounds end
(``in_progress``, with the rounds done so far) and when it ends (``completed``, with a conclusion
from the repository's :class:`~tracker.settings.CheckPolicy`, a summary table per hardware kind as
the PR comment shows it, and a "Re-run" requested action). Every create and edit is an outbox row of
kind ``check`` (:mod:`tracker.github.outbox`), queued by :func:`tracker.github.status.queue_check`:
a row not sent yet takes the newest state instead of a second row being queued, so GitHub gets at
most one edit per flush whatever the number of arms that ended meanwhile, and a new row only when
the status or the rounds done changed. The body is rendered when the row is sent, from the
comparison as it is then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.comparisons.summary import ComparisonView
from tracker.diagnosis.facts import Finding
from tracker.enums import ComparisonState, OutboxKind, OutputStatus, Verdict
from tracker.github.client import GithubClient
from tracker.github.render import comparison_link, render_request, render_tables
from tracker.models import Comparison, GithubOutbox
from tracker.settings import CheckPolicy, Settings

RERUN_ACTION = "rerun"  # the identifier of the "Re-run" requested action
MAX_SUMMARY = 65535  # characters GitHub keeps of a check run's output summary
_OPEN = (ComparisonState.PENDING, ComparisonState.RUNNING)


def external_id(comparison: Comparison) -> str:
    """What the check run carries to find its comparison again: ``<pr number>:<comparison id>``."""
    return f"{comparison.pr_number}:{comparison.id}"


def check_status(comparison: Comparison) -> str:
    """``queued`` until a round has run, ``in_progress`` while it runs, then ``completed``."""
    if comparison.state is ComparisonState.PENDING:
        return "queued"
    return "in_progress" if comparison.state is ComparisonState.RUNNING else "completed"


def rounds_done(comparison: Comparison) -> int:
    """Rounds finished over all of the comparison's results."""
    return sum(result.rounds_done for result in comparison.results)


def conclusion(comparison: Comparison, policy: CheckPolicy) -> str | None:
    """The check run's conclusion under ``policy``; ``None`` while the comparison runs."""
    if comparison.state in _OPEN:
        return None
    if comparison.state is ComparisonState.CANCELLED:
        return policy.cancelled
    if comparison.state is ComparisonState.FAILED:
        return policy.failed
    verdicts = {result.verdict for result in comparison.results}
    if any(result.output_status is OutputStatus.CHANGED for result in comparison.results):
        return policy.output_changed
    if Verdict.REGRESSION in verdicts:
        return policy.regression
    if Verdict.INCONCLUSIVE in verdicts:
        return policy.too_noisy
    return policy.success


def policy_for(settings: Settings, repository: str) -> CheckPolicy:
    """The repository's check policy: its own entry in ``github_check_policies``, else the default."""
    for name, policy in settings.github_check_policies.items():
        if name.lower() == repository.lower():
            return policy
    return settings.github_check_policy


def maybe_created(session: Session, comparison_id: int) -> bool:
    """Whether an earlier try of the comparison's check rows may have created its check run
    (one was claimed or failed), so that it is looked for before another is created."""
    tried = session.scalar(
        select(GithubOutbox.id)
        .where(
            GithubOutbox.kind == OutboxKind.CHECK,
            GithubOutbox.comparison_id == comparison_id,
            (GithubOutbox.attempts > 0) | GithubOutbox.next_attempt_at.is_not(None),
        )
        .limit(1)
    )
    return tried is not None


def check_body(
    view: ComparisonView,
    *,
    settings: Settings,
    diagnoses: Mapping[tuple[int, int], Sequence[Finding]] | None = None,
) -> dict[str, Any]:
    """The check run as GitHub takes it (create or edit): name, status, conclusion, output,
    link to the dashboard, and the "Re-run" action once completed."""
    comparison = view.comparison
    assert comparison.github_repository is not None
    status = check_status(comparison)
    body: dict[str, Any] = {
        "name": settings.github_status_context,
        "external_id": external_id(comparison),
        "status": status,
        "output": {
            "title": _title(comparison, status),
            "summary": _summary(view, public_url=settings.public_url, diagnoses=diagnoses),
        },
    }
    link = comparison_link(settings.public_url, comparison.id)
    if link:
        body["details_url"] = link
    if status == "completed":
        body["conclusion"] = conclusion(comparison, policy_for(settings, comparison.github_repository))
        if comparison.finished_at is not None:
            body["completed_at"] = comparison.finished_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        body["actions"] = [
            {
                "label": "Re-run",
                "description": "Measure this comparison again",  # GitHub keeps 40 characters
                "identifier": RERUN_ACTION,
            }
        ]
    return body


def _title(comparison: Comparison, status: str) -> str:
    results = comparison.results
    if status == "queued":
        return f"Comparison {comparison.id}: queued, waiting for a runner"
    if status == "in_progress":
        # Rounds added while inconclusive count once their jobs exist.
        planned = max(comparison.rounds, comparison.rounds_scheduled) * max(len(results), 1)
        return f"Comparison {comparison.id}: {rounds_done(comparison)} of {planned} rounds done"
    if comparison.state is ComparisonState.CANCELLED:
        return f"Comparison {comparison.id} was cancelled"
    if comparison.state is ComparisonState.FAILED:
        return f"Comparison {comparison.id} failed: nothing measured"
    counts = {verdict: sum(1 for r in results if r.verdict is verdict) for verdict in Verdict}
    changed = sum(1 for r in results if r.output_status is OutputStatus.CHANGED)
    parts = [
        f"{counts[Verdict.REGRESSION]} regression(s)",
        f"{counts[Verdict.IMPROVEMENT]} improvement(s)",
        f"{counts[Verdict.INCONCLUSIVE]} too noisy",
    ]
    if changed:
        parts.append(f"{changed} output(s) changed")
    return f"Comparison {comparison.id}: " + ", ".join(parts) + f" of {len(results)} result(s)"


def _summary(
    view: ComparisonView,
    *,
    public_url: str | None,
    diagnoses: Mapping[tuple[int, int], Sequence[Finding]] | None,
) -> str:
    lines = render_tables(view, public_url=public_url, diagnoses=diagnoses)
    lines += [
        "Values are median denoise step times (ms), head vs base over interleaved rounds.",
        "",
        *render_request(view.comparison),
    ]
    text = "\n".join(lines) + "\n"
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def send_check(
    client: GithubClient,
    repository: str,
    head_sha: str,
    check_run_id: int | None,
    body: dict[str, Any],
    tried_before: bool,
) -> int:
    """Create the check run on ``head_sha``, or edit it (``check_run_id``) when it exists; its id. After a try whose
    outcome is unknown (a 5xx, a timeout: GitHub may have created it) the check runs of the head are
    searched for its ``external_id`` first, so a comparison never gets two."""
    if check_run_id is None and tried_before:
        check_run_id = _find_check_run(client, repository, head_sha, body["name"], body["external_id"])
    if check_run_id is not None:
        client.request(
            "PATCH", f"/repos/{repository}/check-runs/{check_run_id}", repository=repository, json=body
        )
        return check_run_id
    created = client.request(
        "POST", f"/repos/{repository}/check-runs", repository=repository, json={**body, "head_sha": head_sha}
    )
    return int(created["id"])


def _find_check_run(client: GithubClient, repository: str, head_sha: str, name: str, ours: str) -> int | None:
    """The id of the check run named ``name`` on ``head_sha`` whose ``external_id`` is ``ours``."""
    for page in range(1, 11):
        answer = client.request(
            "GET",
            f"/repos/{repository}/commits/{head_sha}/check-runs"
            f"?check_name={quote(name, safe='')}&filter=all&per_page=100&page={page}",
            repository=repository,
        )
        runs = answer.get("check_runs", []) if isinstance(answer, dict) else []
        for run in runs:
            if run.get("external_id") == ours:
                return int(run["id"])
        if len(runs) < 100:
            return None
    return None
