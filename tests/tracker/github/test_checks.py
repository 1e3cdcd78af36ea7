"""A comparison's check run: which ``check_run`` deliveries the bot acts on, one waiting outbox row
per comparison whatever the number of arms that end, and the conclusions of the default policy."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.orm import Session

from tests.conftest import DATA
from tests.tracker.comparisons.test_comparisons import compare
from tracker.enums import ComparisonState, OutboxKind, OutputStatus, Verdict
from tracker.github import outbox
from tracker.github.checks import conclusion
from tracker.github.events import CheckRunEvent, MalformedDelivery, read_event
from tracker.github.status import comparison_changed
from tracker.models import Comparison, ComparisonResult, utcnow
from tracker.settings import CheckPolicy

HEAD = "2" * 40


def delivery(
    action: str, *, external_id: str = "43650:7", identifier: str | None = "rerun"
) -> dict[str, Any]:
    template = json.loads((DATA / "github" / "issue_comment_created_pr.json").read_text())
    payload: dict[str, Any] = {
        "action": action,
        "check_run": {"id": 99, "head_sha": HEAD, "external_id": external_id, "pull_requests": []},
        "repository": template["repository"],
        "installation": template["installation"],
        "sender": template["sender"],
    }
    if identifier is not None:
        payload["requested_action"] = {"identifier": identifier}
    return payload


def test_the_re_run_action_and_a_re_request_are_read_and_other_check_run_deliveries_ignored() -> None:
    event = read_event("check_run", delivery("requested_action"))
    assert isinstance(event, CheckRunEvent)
    assert (event.pr_number, event.comparison_id, event.check_run_id, event.head_sha) == (43650, 7, 99, HEAD)
    assert isinstance(read_event("check_run", delivery("rerequested", identifier=None)), CheckRunEvent)
    assert read_event("check_run", delivery("created")) is None
    assert read_event("check_run", delivery("requested_action", identifier="other")) is None
    assert read_event("check_run", delivery("rerequested", external_id="someone-elses")) is None
    with pytest.raises(MalformedDelivery, match=r"check_run\.external_id"):
        read_event("check_run", delivery("rerequested", external_id="43650:seven"))


def test_a_comparison_has_one_waiting_check_row_and_a_new_one_only_once_that_is_claimed(
    session: Session,
) -> None:
    comparison = compare(session, rounds=2, pr_number=43650)
    comparison.github_repository, comparison.head_sha = "sgl-project/sglang", HEAD
    comparison_changed(session=session, comparison=comparison, check_run=True, installation_id=7001)
    comparison.state = ComparisonState.RUNNING
    comparison_changed(session=session, comparison=comparison)
    [row] = outbox.pending(session=session, kind=OutboxKind.CHECK)
    assert row.payload == {"status": "in_progress", "rounds": 0, "installation_id": 7001}
    row.next_attempt_at = utcnow()  # claimed by a flush: what changes next is a new row
    comparison_changed(session=session, comparison=comparison)  # nothing changed
    assert len(outbox.pending(session=session, kind=OutboxKind.CHECK)) == 1
    comparison.results[0].rounds_done = 1
    comparison_changed(session=session, comparison=comparison)
    claimed, newer = outbox.pending(session=session, kind=OutboxKind.CHECK)
    assert claimed.id == row.id
    assert newer.payload == {"status": "in_progress", "rounds": 1, "installation_id": 7001}


def test_a_comparison_that_never_asked_for_a_check_run_gets_none(session: Session) -> None:
    comparison = compare(session, rounds=2, pr_number=43650)
    comparison.github_repository, comparison.head_sha = "sgl-project/sglang", HEAD
    comparison_changed(session=session, comparison=comparison)
    assert outbox.pending(session=session, kind=OutboxKind.CHECK) == []
    assert len(outbox.pending(session=session, kind=OutboxKind.STATUS)) == 1


@pytest.mark.parametrize(
    ("state", "verdicts", "output", "expected"),
    [
        (ComparisonState.RUNNING, [Verdict.PENDING], None, None),
        (ComparisonState.DONE, [Verdict.NO_CHANGE, Verdict.IMPROVEMENT], None, "success"),
        (ComparisonState.DONE, [Verdict.INCONCLUSIVE, Verdict.NO_CHANGE], None, "neutral"),
        (ComparisonState.DONE, [Verdict.INCONCLUSIVE, Verdict.REGRESSION], None, "failure"),
        (ComparisonState.DONE, [Verdict.IMPROVEMENT], OutputStatus.CHANGED, "failure"),
        (ComparisonState.FAILED, [], None, "failure"),
        (ComparisonState.CANCELLED, [Verdict.REGRESSION], None, "cancelled"),
    ],
)
def test_the_default_policy(
    state: ComparisonState, verdicts: list[Verdict], output: OutputStatus | None, expected: str | None
) -> None:
    results = [ComparisonResult(verdict=verdict, output_status=output) for verdict in verdicts]
    assert conclusion(Comparison(id=1, state=state, results=results), CheckPolicy()) == expected
