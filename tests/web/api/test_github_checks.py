"""A ``/perf`` comparison as a GitHub check run (App mode), end to end against the fake GitHub:
queued, in progress with the rounds done, completed with the policy's conclusion and a summary
table; the "Re-run" action from a maintainer measures again, from anyone else is refused and told;
token mode keeps to commit statuses."""

# The webhook tests' fixtures are imported by name, and tests take them as arguments.
# ruff: noqa: F811

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.fakes import github_shapes
from tests.fakes.fake_github import FakeGithub
from tests.fakes.github_contract import event_problems
from tests.tracker.comparisons.test_comparisons import alternating, drive, planted
from tests.tracker.github.test_client import app_key  # noqa: F401
from tests.web.api.test_github_webhook import (  # noqa: F401 - fixtures
    DATA,
    HEAD_SHA,
    MERGE_BASE,
    PR,
    REPO,
    Delivered,
    Hook,
    _with_flushes,
    api,
    comparisons,
    flush,
    hook,
    settings,
)
from tracker.enums import ComparisonState, OutboxKind
from tracker.github import outbox
from tracker.github.client import GithubClient
from tracker.settings import CheckPolicy, Settings
from web.api.github import get_github_client

pytestmark = pytest.mark.dialect

APP_ID = 912345
CASE = "qwen-image-t2i-1024"
COMMAND = f"/perf {CASE} on H200 rounds 2"


@pytest.fixture
def fake(app_key: tuple[str, str]) -> FakeGithub:
    # The App's tokens are checked against the fake's clock: the client signs them with the real one.
    fake = FakeGithub(app_public_key=app_key[1], now=dt.datetime.now(dt.UTC))
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base=MERGE_BASE)
    fake.permissions[(REPO, "maintainer-m")] = "write"
    return fake


@pytest.fixture
def github(fake: FakeGithub, app_key: tuple[str, str], settings: Settings) -> Iterator[GithubClient]:
    settings.github_app_id = APP_ID
    client = GithubClient(
        app_id=APP_ID, private_key=app_key[0], transport=fake.transport(), attempts=2, sleep=lambda _s: None
    )
    yield client
    client.close()


def check_runs(fake: FakeGithub) -> list[dict[str, Any]]:
    return list(fake.check_runs.values())


def rerun(hook: Hook, fake: FakeGithub, check_run_id: int, *, sender: str, action: str) -> Delivered:
    """GitHub's ``check_run`` delivery: the "Re-run" button pressed, or the run re-requested."""
    return hook.send("check_run", check_run_payload(fake, check_run_id, sender=sender, action=action))


def check_run_payload(fake: FakeGithub, check_run_id: int, *, sender: str, action: str) -> dict[str, Any]:
    """The payload GitHub sends about one of the fake's check runs."""
    template = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    payload: dict[str, Any] = {
        "action": action,
        "check_run": github_shapes.check_run(REPO, fake.check_runs[check_run_id], fake.app_slug),
        "repository": template["repository"],
        "installation": template["installation"],
        "sender": {**template["sender"], "login": sender},
    }
    if action == "requested_action":
        payload["requested_action"] = {"identifier": "rerun"}
    return payload


@pytest.mark.parametrize(
    ("outcome", "conclusion", "title"),
    [
        (planted(10.0), "failure", "1 regression(s), 0 improvement(s), 0 too noisy of 1 result(s)"),
        (alternating, "neutral", "0 regression(s), 0 improvement(s), 1 too noisy of 1 result(s)"),
    ],
    ids=["regression", "too-noisy"],
)
def test_a_perf_comparison_is_a_check_run_from_queued_to_its_conclusion(
    hook: Hook,
    session: Session,
    settings: Settings,
    github: GithubClient,
    fake: FakeGithub,
    outcome: Any,
    conclusion: str,
    title: str,
) -> None:
    hook.comment(COMMAND)
    [comparison] = comparisons(session)
    [created] = check_runs(fake)
    assert created["head_sha"] == HEAD_SHA
    assert created["name"] == "perftrack/perf"
    assert created["external_id"] == f"{PR}:{comparison.id}"
    assert created["details_url"] == f"https://perftrack.example.org/comparisons/{comparison.id}"
    assert comparison.github_check_run_id == created["id"]

    ran = drive(session, _with_flushes(session, settings, github, outcome))
    flush(session, settings, github)

    session.refresh(comparison)
    assert comparison.state is ComparisonState.DONE
    [finished] = check_runs(fake)  # one check run, edited in place
    history = [(status, concluded) for _id, status, concluded, _title in fake.check_run_history]
    assert history[0] == ("queued", None)
    assert history[-1] == ("completed", conclusion)
    progress = [title for _id, status, _c, title in fake.check_run_history if status == "in_progress"]
    assert progress, "the rounds done so far are shown while it runs"
    assert all(" rounds done" in line for line in progress)
    # One edit per round at most, never one per arm.
    assert len(progress) <= sum(result.rounds_done for result in comparison.results) < len(ran)
    assert finished["output"]["title"] == f"Comparison {comparison.id}: {title}"
    summary = finished["output"]["summary"]
    assert "#### H200" in summary
    assert f"| `{CASE}` |" in summary
    assert "| case | base | this PR | change | 95 % CI | verdict | rounds |" in summary
    assert f"- Command: `{COMMAND}` by @maintainer-m" in summary
    assert finished["actions"] == [
        {"label": "Re-run", "description": "Measure this comparison again", "identifier": "rerun"}
    ]
    # App mode keeps the commit status too (branch protection may require it).
    assert fake.statuses[-1]["state"] == {"failure": "failure", "neutral": "success"}[conclusion]
    assert outbox.pending(session=session, kind=OutboxKind.CHECK) == []


def test_a_check_run_whose_creation_lost_its_answer_is_found_again_not_created_twice(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(1, methods=("POST",), path="/check-runs", carried_out=True)
    hook.comment(COMMAND)  # the flush after it: created on GitHub, but the answer was lost
    [comparison] = comparisons(session)
    assert comparison.github_check_run_id is None
    [created] = check_runs(fake)
    drive(session, planted(10.0))
    flush(session, settings, github, later_s=3600)
    session.refresh(comparison)
    [finished] = check_runs(fake)
    assert comparison.github_check_run_id == created["id"] == finished["id"]
    assert (finished["status"], finished["conclusion"]) == ("completed", "failure")
    assert fake.calls_to("GET", f"/commits/{HEAD_SHA}/check-runs")


def test_a_cancelled_comparison_completes_its_check_run_as_cancelled(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(COMMAND)
    hook.comment("/perf cancel")
    [comparison] = comparisons(session)
    assert comparison.state is ComparisonState.CANCELLED
    [run] = check_runs(fake)
    assert (run["status"], run["conclusion"]) == ("completed", "cancelled")
    assert run["output"]["title"] == f"Comparison {comparison.id} was cancelled"


def test_the_repositorys_policy_sets_the_conclusion(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    settings.github_check_policies = {REPO.upper(): CheckPolicy(too_noisy="failure", regression="neutral")}
    hook.comment(COMMAND)
    drive(session, alternating)
    flush(session, settings, github)
    [run] = check_runs(fake)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")


@pytest.mark.parametrize("action", ["requested_action", "rerequested"])
def test_a_maintainers_re_run_measures_the_comparison_again(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub, action: str
) -> None:
    hook.comment(COMMAND)
    drive(session, planted(10.0))
    flush(session, settings, github)
    [first] = comparisons(session)
    answer = rerun(hook, fake, first.github_check_run_id or 0, sender="maintainer-m", action=action)
    first_again, second = comparisons(session)
    assert answer.outcome == f"comparison {second.id} created on check run"
    sent = check_run_payload(fake, first.github_check_run_id or 0, sender="maintainer-m", action=action)
    assert event_problems("check_run", sent) == []  # what GitHub sends
    assert (second.command, second.head_sha, second.requested_by) == (COMMAND, HEAD_SHA, "maintainer-m")
    assert second.pr_url == first.pr_url
    assert second.state is ComparisonState.PENDING
    assert first_again.state is ComparisonState.DONE
    runs = check_runs(fake)
    assert len(runs) == 2
    assert (runs[1]["status"], runs[1]["external_id"]) == ("queued", f"{PR}:{second.id}")


def test_a_re_run_of_a_running_comparison_replaces_it(hook: Hook, session: Session, fake: FakeGithub) -> None:
    hook.comment(COMMAND)
    [first] = comparisons(session)
    rerun(hook, fake, first.github_check_run_id or 0, sender="maintainer-m", action="requested_action")
    first_again, second = comparisons(session)
    assert first_again.state is ComparisonState.CANCELLED
    assert second.state is ComparisonState.PENDING
    assert [run.get("conclusion") for run in check_runs(fake)] == ["cancelled", None]


def test_a_re_run_from_someone_without_write_access_is_refused_and_told(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    hook.comment(COMMAND)
    drive(session, planted(10.0))
    flush(session, settings, github)
    [comparison] = comparisons(session)
    answer = rerun(
        hook, fake, comparison.github_check_run_id or 0, sender="drive-by", action="requested_action"
    )
    assert answer.outcome == f"refused: drive-by may not re-run comparison {comparison.id}"
    assert comparisons(session) == [comparison]
    assert len(check_runs(fake)) == 1
    [told] = [c for c in fake.comments_on(PR) if "drive-by" in c["body"]]
    assert told["body"].startswith("Sorry @drive-by, re-running perftrack's check")
    assert "nothing was started" in told["body"]


def test_a_check_run_that_is_no_comparisons_starts_nothing(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(COMMAND)
    [comparison] = comparisons(session)
    run = fake.check_runs[comparison.github_check_run_id or 0]
    run["external_id"] = f"{PR}:{comparison.id + 1000}"
    answer = rerun(hook, fake, run["id"], sender="maintainer-m", action="rerequested")
    assert answer.outcome.startswith(f"ignored: check run {run['id']} is no comparison's")
    assert comparisons(session) == [comparison]


def test_token_mode_posts_commit_statuses_and_no_check_runs(
    api: TestClient, session: Session, settings: Settings
) -> None:
    token_fake = FakeGithub()
    token_fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base=MERGE_BASE)
    token_fake.permissions[(REPO, "maintainer-m")] = "write"
    client = GithubClient(token="ghp_test_token", transport=token_fake.transport(), attempts=1)
    api.app.dependency_overrides[get_github_client] = lambda: client  # type: ignore[attr-defined]
    Hook(api, session).comment(COMMAND)
    drive(session, planted(10.0))
    flush(session, settings, client)
    assert [status["state"] for status in token_fake.statuses] == ["pending", "failure"]
    assert token_fake.check_runs == {}
    assert token_fake.calls_to("POST", "/check-runs") == []
    assert outbox.pending(session=session) == []
    [comparison] = comparisons(session)
    assert comparison.github_check_run_id is None
    client.close()
