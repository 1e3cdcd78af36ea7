"""Who may make the bot run a pull request's code, and the bot under real GitHub conditions: forks and
pushers without write access, its own comments, cancel / close / closed PRs, edits, GitHub set-up
errors told apart from refusals, form-encoded and malformed deliveries, retries and pruning."""

# The webhook tests' fixtures are imported by name, and tests take them as arguments.
# ruff: noqa: F811

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.fakes.fake_github import FakeGithub
from tests.tracker.github.test_client import app_key  # noqa: F401
from tests.web.api.test_github_webhook import (  # noqa: F401 - fixtures
    DATA,
    HEAD_SHA,
    NEW_HEAD,
    PR,
    REPO,
    SECRET,
    URL,
    Hook,
    api,
    carry_out,
    comparisons,
    fake,
    flush,
    github,
    hook,
    push,
    pushed,
    settings,
)
from tracker.enums import ComparisonState, DeliveryState
from tracker.github.client import GithubClient
from tracker.github.commands import HELP, find_command
from tracker.github.inbox import MAX_ATTEMPTS, prune_deliveries
from tracker.github.webhook import sign
from tracker.models import GithubDelivery, utcnow
from tracker.settings import Settings
from web.api.github import get_github_client

CASE = "qwen-image-t2i-1024"


def deliveries(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(GithubDelivery)) or 0


# --- who may start measurements ---


def test_a_forks_push_is_not_built_until_a_maintainer_asks_for_that_head(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base="1" * 40, fork="contributor-c/sglang")
    hook.comment(f"/perf {CASE}")
    [approved] = comparisons(session)
    answer = push(hook, fake, sender="contributor-c", fork=True)
    assert answer.outcome.startswith("refused:")
    assert "fork" in answer.outcome
    assert comparisons(session) == [approved]  # nothing new runs, the approved head keeps running
    assert approved.state is ComparisonState.PENDING
    [*_, note] = fake.comments_on(PR)
    assert "A maintainer can comment `/perf`" in note["body"]
    # A maintainer with write access pushing to the fork's branch does not start it either.
    fake.permissions[(REPO, "maintainer-m")] = "admin"
    assert push(hook, fake, sender="maintainer-m", fork=True).outcome.startswith("refused:")
    # The maintainer's fresh /perf measures exactly the new head.
    hook.comment(f"/perf {CASE}")
    latest = comparisons(session)[-1]
    assert latest.head_sha == NEW_HEAD
    assert latest.head_candidate.patches[-1].ref == f"refs/pull/{PR}/head@{NEW_HEAD}"


def test_a_perf_carried_out_after_a_push_measures_the_head_the_comment_saw(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    """GitHub fails while the comment waits; the fork's author pushes; the approval stays with the
    head the maintainer commented on."""
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base="1" * 40, fork="contributor-c/sglang")
    fake.fail_next(100)
    assert hook.comment(f"/perf {CASE}").state is DeliveryState.PENDING
    # The push waits for the comment (it is carried out after it), then is refused as a fork's push.
    assert push(hook, fake, sender="contributor-c", fork=True).state is DeliveryState.PENDING
    fake.fail_next(0)
    measured, pushed_head = carry_out(session, settings, github, later_s=20)
    assert measured.startswith("comparison ")
    assert pushed_head.startswith("refused:")
    assert "fork" in pushed_head
    [comparison] = comparisons(session)
    assert comparison.head_sha == HEAD_SHA
    assert comparison.head_candidate.patches[-1].ref == f"refs/pull/{PR}/head@{HEAD_SHA}"


def test_a_push_by_someone_without_write_access_starts_nothing(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(f"/perf {CASE}")
    answer = push(hook, fake, sender="drive-by")
    assert answer.outcome == "refused: drive-by may not start /perf by push"
    assert len(comparisons(session)) == 1
    assert "@drive-by does not start measurements" in fake.comments_on(PR)[-1]["body"]


def test_the_perf_label_from_someone_without_write_access_starts_nothing(
    hook: Hook, session: Session, fake: FakeGithub, settings: Settings
) -> None:
    settings.github_perf_label = "run-perf"
    answer = push(hook, fake, action="labeled", label="run-perf", sender="triager")
    assert answer.outcome == "refused: triager may not start /perf by label"
    assert comparisons(session) == []


def test_perf_cancel_stops_the_re_runs_on_push_until_the_next_perf(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(f"/perf {CASE}")
    hook.comment("/perf cancel")
    answer = push(hook, fake)
    assert answer.outcome == "ignored: measuring was cancelled on this pull request; /perf starts it again"
    [cancelled] = comparisons(session)
    assert cancelled.state is ComparisonState.CANCELLED
    hook.comment(f"/perf {CASE}")
    assert comparisons(session)[-1].head_sha == NEW_HEAD
    fake.add_pull(REPO, PR, head_sha="5" * 40, merge_base="1" * 40)
    assert hook.send("pull_request", pushed(head="5" * 40)).outcome.endswith("created on push, 1 superseded")


def test_perf_cancel_after_the_comparison_ended_stops_the_re_runs_too(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(f"/perf {CASE}")
    [finished] = comparisons(session)
    finished.state = ComparisonState.DONE
    session.commit()
    answer = hook.comment("/perf cancel")
    assert answer.outcome == "cancel: nothing running; re-runs on push stopped"
    assert "pushes will not be measured until the next `/perf`" in fake.comments_on(PR)[-1]["body"]
    assert push(hook, fake).outcome.startswith("ignored: measuring was cancelled")
    assert comparisons(session) == [finished]
    assert hook.comment("/perf cancel").outcome == "cancel: nothing to cancel"  # said once
    # The next /perf measures again, and pushes re-run it again.
    hook.comment(f"/perf {CASE}")
    assert len(comparisons(session)) == 2
    fake.add_pull(REPO, PR, head_sha="5" * 40, merge_base="1" * 40)
    payload = pushed(head="5" * 40)
    assert hook.send("pull_request", payload).outcome.startswith("comparison ")


def test_closing_the_pull_request_cancels_its_comparison(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment(f"/perf {CASE}")
    closed = pushed(head=HEAD_SHA)
    closed["action"] = "closed"
    closed["pull_request"]["state"] = "closed"
    [comparison] = comparisons(session)
    answer = hook.send("pull_request", closed)
    assert answer.outcome == f"comparison {comparison.id} cancelled"
    session.refresh(comparison)
    assert comparison.state is ComparisonState.CANCELLED
    assert fake.statuses[-1]["state"] == "error"


def test_perf_on_a_closed_pull_request_is_refused(hook: Hook, session: Session, fake: FakeGithub) -> None:
    answer = hook.comment(f"/perf {CASE}", state="closed")
    assert answer.outcome == "refused: the pull request is closed"
    assert comparisons(session) == []
    assert "this pull request is closed" in fake.comments_on(PR)[-1]["body"]


def test_a_perf_held_up_until_the_pull_request_closed_starts_nothing(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base="1" * 40)
    fake.fail_next(100)
    assert hook.comment(f"/perf {CASE}").state is DeliveryState.PENDING
    fake.fail_next(0)
    fake.pulls[(REPO, PR)]["state"] = "closed"
    [outcome] = carry_out(session, settings, github, later_s=20)
    assert outcome == f"rejected: pull request #{PR} is closed now; reopen it to measure it"
    assert comparisons(session) == []


def test_an_edited_comment_runs_nothing(hook: Hook, session: Session, fake: FakeGithub) -> None:
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    payload["action"] = "edited"
    payload["comment"]["body"] = f"/perf {CASE}"
    payload["changes"] = {"body": {"from": "/perf qwen-imag-t2i-1024"}}
    answer = hook.send("issue_comment", payload)
    assert (answer.status_code, answer.outcome) == (202, "ignored")
    assert comparisons(session) == []
    assert fake.calls == []
    assert "edit a comment and nothing runs" in HELP


# --- the bot's own comments ---


def test_the_bot_never_reads_its_own_comments_as_commands(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    # Token mode: the bot comments as an ordinary user; a bad command gets the help as a reply.
    hook.comment("/perf rounds many")
    [reply] = fake.comments_on(PR)
    assert "/perf help" in reply["body"]
    echoed = hook.comment(reply["body"], user=fake.token_login)
    assert echoed.outcome in ("ignored: no /perf command", "ignored: a comment of the bot itself")
    help_text = hook.comment(HELP, user=fake.token_login)
    assert help_text.outcome == "ignored: no /perf command"
    # Even a bare command line, when the bot's user wrote it, is not a command.
    assert hook.comment("/perf", user=fake.token_login).outcome == "ignored: a comment of the bot itself"
    assert len(fake.comments_on(PR)) == 1
    assert comparisons(session) == []


def test_the_help_and_quoted_commands_hold_no_command() -> None:
    assert find_command(HELP) is None
    assert find_command("> /perf\nthanks") is None
    assert find_command("```\n/perf\n```") is None
    assert find_command("~~~\n/perf\n~~~\n/perf cancel") == "/perf cancel"


def test_comments_of_bots_and_of_the_app_are_ignored_at_once(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    payload["comment"]["body"] = "/perf"
    payload["comment"]["user"]["type"] = "Bot"
    answer = hook.send("issue_comment", payload)
    assert (answer.status_code, answer.outcome) == (200, "ignored: a comment of the bot itself")
    assert fake.calls == []


# --- GitHub set-up problems, outages, retries ---


def test_an_app_not_installed_fails_with_the_reason_and_runs_again_when_redelivered(
    api: TestClient,
    session: Session,
    settings: Settings,
    app_key: tuple[str, str],
) -> None:
    private, public = app_key
    fake = FakeGithub(app_public_key=public, installed_on=set(), now=dt.datetime.now(dt.UTC))
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base="1" * 40)
    fake.permissions[(REPO, "maintainer-m")] = "write"
    settings.github_app_id = 912345
    client = GithubClient(app_id=912345, private_key=private, transport=fake.transport(), attempts=1)
    api.app.dependency_overrides[get_github_client] = lambda: client  # type: ignore[attr-defined]
    hook = Hook(api, session)
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    payload.pop("installation")
    payload["comment"]["body"] = f"/perf {CASE}"
    answer = hook.send("issue_comment", payload, delivery="not-installed")
    assert answer.state is DeliveryState.FAILED
    assert (
        answer.outcome
        == f"failed: the GitHub App is not installed on {REPO}: GET /repos/{REPO}/installation: 404 Not Found"
    )
    assert "refused" not in answer.outcome
    assert comparisons(session) == []
    # Installed now: GitHub's "Redeliver" runs the same delivery again.
    fake.installed_on = None
    again = hook.send("issue_comment", payload, delivery="not-installed")
    assert again.answer == {"outcome": "queued again"}
    assert again.outcome.startswith("comparison ")


def test_a_delivery_github_keeps_failing_is_given_up_with_a_reply(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(10_000, methods=("GET",))
    answer = hook.comment(f"/perf {CASE}", delivery="doomed")
    assert answer.state is DeliveryState.PENDING
    for hours in range(1, MAX_ATTEMPTS + 1):
        carry_out(session, settings, github, later_s=hours * 3600)
    session.expire_all()
    row = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == "doomed"))
    assert row is not None
    assert row.state is DeliveryState.FAILED
    assert row.attempts == MAX_ATTEMPTS
    assert "502" in row.outcome
    fake.fail_next(0)
    flush(session, settings, github)
    assert "could not carry out `/perf qwen-image-t2i-1024`" in fake.comments_on(PR)[-1]["body"]


def test_handled_deliveries_are_pruned_and_pending_ones_kept(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment("thanks!")
    fake.fail_next(100)
    hook.comment(f"/perf {CASE}")  # pending: GitHub fails
    assert deliveries(session) == 2
    later = utcnow() + dt.timedelta(days=15)
    assert prune_deliveries(session=session, now=later, keep=dt.timedelta(days=14)) == 1
    [kept] = session.scalars(select(GithubDelivery)).all()
    assert kept.state is DeliveryState.PENDING


# --- what a delivery may look like ---


def test_a_form_encoded_delivery_is_read_like_a_json_one(hook: Hook, session: Session) -> None:
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    payload["comment"]["body"] = f"/perf {CASE}"
    raw = urlencode({"payload": json.dumps(payload)}).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "form-1",
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Hub-Signature-256": sign(SECRET, raw),
    }
    answer = hook.delivered(hook.api.post(URL, content=raw, headers=headers), "form-1")
    assert answer.status_code == 202
    assert answer.outcome.startswith("comparison ")


@pytest.mark.parametrize(
    ("event", "change", "field"),
    [
        ("issue_comment", lambda p: p["comment"].update(user=None), "comment.user"),
        ("issue_comment", lambda p: p["issue"].pop("number"), "issue.number"),
        ("issue_comment", lambda p: p["issue"].update(number="43650"), "issue.number"),
        ("issue_comment", lambda p: p["issue"].update(number=2**40), "issue.number"),
        ("issue_comment", lambda p: p.update(repository=None), "repository"),
        ("issue_comment", lambda p: p["comment"].update(body=["/perf"]), "comment.body"),
        ("issue_comment", lambda p: p["comment"].update(id=True), "comment.id"),
        ("issue_comment", lambda p: p["installation"].update(id="7001"), "installation.id"),
        ("pull_request", lambda p: p["pull_request"]["head"].update(sha=None), "pull_request.head.sha"),
        ("pull_request", lambda p: p["pull_request"]["head"].update(sha="main"), "pull_request.head.sha"),
        ("pull_request", lambda p: p.update(pull_request="x"), "pull_request"),
        ("pull_request", lambda p: p["pull_request"]["labels"].append("perf"), "pull_request.labels[1]"),
    ],
)
def test_a_signed_delivery_missing_what_the_bot_needs_is_a_400_and_stores_nothing(
    hook: Hook, session: Session, fake: FakeGithub, event: str, change: Any, field: str
) -> None:
    name = "issue_comment_created_pr.json" if event == "issue_comment" else "pull_request_synchronize.json"
    payload = json.loads((DATA / name).read_text())
    if event == "issue_comment":
        payload["comment"]["body"] = "/perf"
    change(payload)
    answer = hook.send(event, payload)
    assert answer.status_code == 400
    assert field in answer.answer["detail"]
    assert deliveries(session) == 0
    assert fake.calls == []
