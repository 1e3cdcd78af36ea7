"""The scorecard's rows for the loop with people, scored from what people see (the groups API, the
fake GitHub, the receiver), against the toy history's script:

* incident 1 is **one group** across both toy cases (its culprit named, both cases' alerts in it);
* each incident's culprit pull request (the ``(#N)`` of its commit's title) got **exactly one**
  comment from the bot (edited as the group grows, never a second);
* each ``/perf`` comparison has a **completed check run** whose conclusion is the one the check
  policy gives its verdict (output changed, slower, too noisy, else success);
* the receiver got an alert's confirmation and a **nightly summary**, and every signed delivery's
  signature was valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perftrack.demo.loop_view import LoopView, check_run_of, comments_on
from perftrack.demo.receiver import JSON_PATH
from runners.toy import ChangeKind, ToyCommit
from tracker.settings import CheckPolicy
from tracker.vcs.pulls import pull_number_in

CONFIRMED_EVENTS = ("alert.confirmed", "group.confirmed")
SUMMARY_EVENT = "nightly.summary"


@dataclass(frozen=True)
class LoopCheck:
    """One row: what was expected, whether it held, and what was seen."""

    what: str
    ok: bool
    seen: str


def loop_checks(
    view: LoopView,
    commits: Sequence[ToyCommit],
    cases: Iterable[str],
    comparisons: Sequence[Mapping[str, Any]],
    policy: CheckPolicy,
) -> tuple[LoopCheck, ...]:
    """Every row, in the order above."""
    culprits = {commit.incident: commit for commit in commits if commit.kind is ChangeKind.REGRESSION}
    rows = [_one_group(view, culprits.get(1), sorted(set(cases)))]
    rows += [
        _one_comment(view, incident, commit) for incident, commit in sorted(culprits.items()) if incident
    ]
    rows += [_check_run(view, comparison, policy) for comparison in comparisons]
    rows.append(_notified(view))
    return tuple(rows)


def expected_conclusion(comparison: Mapping[str, Any], policy: CheckPolicy) -> str | None:
    """The conclusion the policy gives a comparison as the API returns it (``None`` while it runs)."""
    state = comparison.get("state")
    if state in ("pending", "running"):
        return None
    if state in ("cancelled", "failed"):
        return policy.cancelled if state == "cancelled" else policy.failed
    results = comparison.get("results") or []
    verdicts = {result.get("verdict") for result in results}
    if any((result.get("output") or {}).get("status") == "changed" for result in results):
        return policy.output_changed
    if "regression" in verdicts:
        return policy.regression
    return policy.too_noisy if "inconclusive" in verdicts else policy.success


def _one_group(view: LoopView, culprit: ToyCommit | None, cases: list[str]) -> LoopCheck:
    what = "incident 1 is one group across both toy cases"
    if culprit is None:
        return LoopCheck(what, False, "the script has no incident 1")
    groups = [
        group
        for group in view.groups
        if (group.get("culprit_commit") or {}).get("sha") == culprit.sha
        and group.get("merged_into_id") is None
    ]
    if len(groups) != 1:
        return LoopCheck(what, False, f"{len(groups)} groups name {culprit.sha[:7]} as culprit")
    group = groups[0]
    seen = f"group {group['id']}: {group['alert_count']} alerts in {', '.join(group['cases'])}"
    return LoopCheck(what, set(cases) <= set(group["cases"]), seen)


def _one_comment(view: LoopView, incident: int, culprit: ToyCommit) -> LoopCheck:
    number = pull_number_in(culprit.title)
    what = f"incident {incident}'s culprit PR got exactly one comment"
    if number is None:
        return LoopCheck(what, False, f"{culprit.sha[:7]}'s title names no pull request")
    pull = comments_on(view, number)
    return LoopCheck(
        what, len(pull.bodies) == 1, f"#{number}: {len(pull.bodies)} comment(s), {pull.edits} edit(s)"
    )


def _check_run(view: LoopView, comparison: Mapping[str, Any], policy: CheckPolicy) -> LoopCheck:
    what = f"{comparison.get('command', '/perf')} (#{comparison.get('pr_number')}): check run concluded as its verdict"
    run = check_run_of(view, int(comparison["id"]))
    if run is None:
        return LoopCheck(what, False, f"no check run for comparison {comparison['id']}")
    expected = expected_conclusion(comparison, policy)
    seen = f"{run.get('status')}, {run.get('conclusion')} (verdict: {comparison.get('label', '')!s})"
    return LoopCheck(what, run.get("status") == "completed" and run.get("conclusion") == expected, seen)


def _notified(view: LoopView) -> LoopCheck:
    what = "receiver got a confirmation and a nightly summary, every signature valid"
    events = [item.event for item in view.notifications]
    signed = [item for item in view.notifications if item.path == JSON_PATH]
    bad = sum(item.verified is False for item in signed)
    confirmed = sum(event in CONFIRMED_EVENTS for event in events)
    summaries = events.count(SUMMARY_EVENT)
    seen = f"{len(events)} received: {confirmed} confirmed, {summaries} nightly summaries; {bad} bad signature(s)"
    return LoopCheck(what, confirmed > 0 and summaries > 0 and bool(signed) and bad == 0, seen)
