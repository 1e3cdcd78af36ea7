"""GitHub's payloads read into the events the bot acts on, from the recorded deliveries in
``tests/data/github``: what is ignored whatever it holds, what is read, and a payload the bot would
act on that does not validate (a field missing, null or of the wrong type) refused naming the field."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import DATA
from tracker.github.events import (
    CommentEvent,
    MalformedDelivery,
    PullRequestEvent,
    event_from_dict,
    read_event,
)

COMMENT = json.loads((DATA / "github" / "issue_comment_created_pr.json").read_text())
PUSH = json.loads((DATA / "github" / "pull_request_synchronize.json").read_text())
REPO = "sgl-project/sglang"


def changed(payload: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    copied = copy.deepcopy(payload)
    change(copied)
    return copied


def test_a_comment_on_a_pull_request_is_read() -> None:
    assert read_event("issue_comment", COMMENT) == CommentEvent(
        repository=REPO,
        pr_number=43650,
        pr_url=f"https://github.com/{REPO}/pull/43650",
        comment_id=2800000001,
        author="maintainer-m",
        author_is_bot=False,
        body=COMMENT["comment"]["body"],
        installation_id=7001,
        pr_open=True,
        via_app_id=None,
    )


def test_a_push_is_read() -> None:
    assert read_event("pull_request", PUSH) == PullRequestEvent(
        action="synchronize",
        repository=REPO,
        pr_number=43650,
        pr_url=f"https://github.com/{REPO}/pull/43650",
        head_sha="4" * 40,
        sender="contributor-c",
        labels=("diffusion",),
        label=None,
        installation_id=7001,
        from_fork=True,  # contributor-c/sglang
        before_sha="2" * 40,
    )


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("ping", json.loads((DATA / "github" / "ping.json").read_text())),
        ("issues", json.loads((DATA / "github" / "issues_opened.json").read_text())),
        ("push", PUSH),
        ("issue_comment", changed(COMMENT, lambda p: p.update(action="edited", comment=None))),
        ("issue_comment", changed(COMMENT, lambda p: p["issue"].pop("pull_request"))),  # an issue
        ("issue_comment", changed(COMMENT, lambda p: p.update(issue="x", comment=5))),
        ("pull_request", changed(PUSH, lambda p: p.update(action="opened", pull_request=None))),
        ("pull_request", changed(PUSH, lambda p: p["pull_request"].update(state="closed", head=None))),
        ("pull_request", {}),
    ],
)
def test_deliveries_the_bot_does_not_act_on_are_ignored_whatever_they_hold(
    event: str, payload: dict[str, Any]
) -> None:
    assert read_event(event, payload) is None


def test_optional_parts_of_a_payload_may_be_missing_or_null() -> None:
    comment = changed(
        COMMENT,
        lambda p: (
            p.pop("installation"),
            p["issue"].pop("html_url"),
            p["issue"]["pull_request"].update(html_url="https://example.org/pr"),
            p["comment"].update(body=None, performed_via_github_app={"id": 912345}),
            p["comment"]["user"].update(type="Bot"),
            p["issue"].update(state="closed"),
        ),
    )
    event = read_event("issue_comment", comment)
    assert isinstance(event, CommentEvent)
    assert (event.installation_id, event.pr_url, event.body) == (None, "https://example.org/pr", "")
    assert (event.via_app_id, event.author_is_bot, event.pr_open) == (912345, True, False)
    push = changed(
        PUSH,
        lambda p: (
            p.update(before="0" * 40, sender=None, installation={"id": None}),
            p["pull_request"]["head"].update(repo=None, sha="A" * 40),
            p["pull_request"].pop("labels"),
        ),
    )
    moved = read_event("pull_request", push)
    assert isinstance(moved, PullRequestEvent)
    assert (moved.before_sha, moved.sender, moved.installation_id) == (None, "", None)
    assert (moved.from_fork, moved.head_sha, moved.labels) == (True, "a" * 40, ())
    same_repo = changed(PUSH, lambda p: p["pull_request"]["head"]["repo"].update(full_name=REPO.upper()))
    branch = read_event("pull_request", same_repo)  # a branch of the repository itself, any case
    assert isinstance(branch, PullRequestEvent)
    assert not branch.from_fork


def test_a_nul_character_is_replaced_before_the_event_is_stored() -> None:
    # PostgreSQL's JSONB, where the delivery's event is stored, cannot hold U+0000.
    event = read_event("issue_comment", changed(COMMENT, lambda p: p["comment"].update(body="/perf\x00")))
    assert isinstance(event, CommentEvent)
    assert event.body == "/perf\ufffd"


@pytest.mark.parametrize(
    ("event", "change", "message"),
    [
        ("issue_comment", lambda p: p.pop("comment"), "comment: Field required"),
        ("issue_comment", lambda p: p["comment"]["user"].pop("login"), "comment.user.login: Field required"),
        (
            "issue_comment",
            lambda p: p["comment"]["user"].update(login=""),
            "comment.user.login: String should",
        ),
        ("issue_comment", lambda p: p["comment"].update(id=0), "comment.id: Input should be greater than"),
        ("issue_comment", lambda p: p["comment"].update(id=2**64), "comment.id: Input should be less than"),
        (
            "issue_comment",
            lambda p: p["issue"].update(number=True),
            "issue.number: Input should be a valid integer",
        ),
        (
            "issue_comment",
            lambda p: p["issue"].update(number=43650.0),
            "issue.number: Input should be a valid int",
        ),
        (
            "issue_comment",
            lambda p: p["repository"].update(full_name="sglang"),
            "repository.full_name: must be",
        ),
        ("issue_comment", lambda p: p["repository"].pop("full_name"), "repository.full_name: Field required"),
        ("issue_comment", lambda p: p["comment"].update(performed_via_github_app={"id": "1"}), "app.id"),
        (
            "issue_comment",
            lambda p: p["issue"].update(state=None),
            "issue.state: Input should be a valid string",
        ),
        ("pull_request", lambda p: p["pull_request"].pop("head"), "pull_request.head: Field required"),
        (
            "pull_request",
            lambda p: p["pull_request"]["head"].update(sha="x" * 40),
            "pull_request.head.sha: must",
        ),
        (
            "pull_request",
            lambda p: p["pull_request"].update(labels={"name": "x"}),
            "pull_request.labels: Input",
        ),
        ("pull_request", lambda p: p.update(label={"name": 7}), "label.name: Input should be a valid string"),
        (
            "pull_request",
            lambda p: p["sender"].update(login=None),
            "sender.login: Input should be a valid string",
        ),
        ("pull_request", lambda p: p.update(before=2), "before: Input should be a valid string"),
        ("pull_request", lambda p: p.update(repository="sgl-project/sglang"), "repository: Input should be"),
    ],
)
def test_a_payload_the_bot_acts_on_that_does_not_validate_names_the_field(
    event: str, change: Callable[[dict[str, Any]], Any], message: str
) -> None:
    payload = changed(COMMENT if event == "issue_comment" else PUSH, change)
    with pytest.raises(MalformedDelivery) as raised:
        read_event(event, payload)
    assert message in str(raised.value)


def test_every_problem_is_named_at_once() -> None:
    payload = changed(COMMENT, lambda p: (p.update(repository=None), p["issue"].update(number="43650")))
    with pytest.raises(MalformedDelivery) as raised:
        read_event("issue_comment", payload)
    assert str(raised.value) == (
        "repository: Input should be a valid dictionary or instance of Repository; "
        "issue.number: Input should be a valid integer"
    )


def test_stored_events_read_back_and_older_rows_still_read() -> None:
    comment, push = read_event("issue_comment", COMMENT), read_event("pull_request", PUSH)
    assert comment is not None
    assert push is not None
    for event in (comment, push):
        stored = json.loads(json.dumps(event.to_dict()))  # through the JSON column
        assert event_from_dict(stored) == event
    assert push.to_dict()["kind"] == "pull_request"
    assert push.to_dict()["labels"] == ["diffusion"]
    # A row stored before ``pr_open`` and ``via_app_id`` existed, with a field since dropped.
    older = {
        "kind": "comment",
        "repository": REPO,
        "pr_number": 1,
        "pr_url": "",
        "comment_id": None,
        "author": "m",
        "author_is_bot": False,
        "body": "/perf",
        "installation_id": None,
        "retired_field": 1,
    }
    read = event_from_dict(older)
    assert isinstance(read, CommentEvent)
    assert (read.pr_open, read.via_app_id, read.comment_id) == (True, None, None)


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"kind": "push"}, "does not match any of the expected tags"),
        ({}, "Unable to extract tag using discriminator 'kind'"),
        ({"kind": "pull_request", "repository": REPO}, "pr_number: Field required"),
    ],
)
def test_a_stored_event_that_cannot_be_read_is_malformed(stored: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedDelivery) as raised:
        event_from_dict(stored)
    assert str(raised.value).startswith("stored event: ")
    assert message in str(raised.value)
