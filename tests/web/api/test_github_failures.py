"""The bot when GitHub fails as GitHub does: rate limits (403 with ``x-ratelimit-remaining: 0``) on
reads and writes, answers lost after a comment was created, a push while a ``/perf`` waits for
GitHub; and what a pull request shows: the perf label after a cancel, one head measured by several
comparisons."""

# The webhook tests' fixtures are imported by name, and tests take them as arguments.
# ruff: noqa: F811

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.fakes.fake_github import FakeGithub
from tests.web.api.test_github_webhook import (  # noqa: F401 - fixtures
    HEAD_SHA,
    NEW_HEAD,
    PR,
    Hook,
    api,
    carry_out,
    comparisons,
    fake,
    flush,
    github,
    hook,
    push,
    settings,
)
from tracker.enums import ComparisonState, DeliveryState, OutboxKind
from tracker.github.client import GithubClient
from tracker.github.render import marker
from tracker.models import GithubDelivery, GithubOutbox, utcnow
from tracker.settings import Settings

pytestmark = pytest.mark.dialect  # the outbox claims rows with FOR UPDATE SKIP LOCKED on PostgreSQL

CASE = "qwen-image-t2i-1024"


def test_a_rate_limited_read_is_tried_again_after_the_reset(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    reset = utcnow().replace(microsecond=0) + dt.timedelta(hours=1)
    fake.rate_limit_next(100, reset_at=reset, methods=("GET",), path=f"/pulls/{PR}")
    answer = hook.comment(f"/perf {CASE}", delivery="limited-1")
    assert answer.state is DeliveryState.PENDING
    assert answer.outcome.startswith("rate limited by GitHub; trying again at")
    row = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == "limited-1"))
    assert row is not None
    assert row.next_attempt_at is not None
    assert reset <= row.next_attempt_at <= reset + dt.timedelta(seconds=2)
    assert row.attempts == 0  # a rate limit is not an attempt
    assert fake.comments_on(PR) == []  # no "could not carry out"
    assert carry_out(session, settings, github, later_s=600) == []  # not before the reset
    fake.fail_next(0)
    [outcome] = carry_out(session, settings, github, later_s=3610)
    assert outcome.startswith("comparison ")
    assert len(comparisons(session)) == 1


def test_rate_limited_writes_are_no_refusals(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    reset = utcnow() + dt.timedelta(seconds=30)
    fake.rate_limit_next(3, reset_at=reset, methods=("POST",), path="/reactions")
    hook.comment(f"/perf {CASE}")
    flush(session, settings, github, later_s=60)
    flush(session, settings, github, later_s=120)
    [reaction] = session.scalars(select(GithubOutbox).where(GithubOutbox.kind == OutboxKind.REACTION)).all()
    assert reaction.attempts == 3
    assert (reaction.refusals, reaction.dead_at) == (0, None)
    flush(session, settings, github, later_s=180)
    assert [item["content"] for item in fake.reactions] == ["eyes"]
    [comment] = fake.comments_on(PR)  # the writes behind the rate limit went out afterwards
    assert "queued" in comment["body"]


def test_a_comment_created_whose_answer_was_lost_is_edited_not_posted_twice(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(1, methods=("POST",), path=f"/issues/{PR}/comments", carried_out=True)
    hook.comment(f"/perf {CASE}")
    [comparison] = comparisons(session)
    [posted] = fake.comments_on(PR)  # GitHub has it, perftrack got a 502
    assert comparison.github_comment_id is None
    flush(session, settings, github, later_s=120)
    assert [comment["id"] for comment in fake.comments_on(PR)] == [posted["id"]]
    assert marker(comparison.id) in posted["body"]
    assert posted["edits"] == 1
    session.refresh(comparison)
    assert comparison.github_comment_id == posted["id"]


def test_a_reply_whose_answer_was_lost_is_not_posted_twice(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(1, methods=("POST",), path=f"/issues/{PR}/comments", carried_out=True)
    hook.comment("/perf help")
    flush(session, settings, github, later_s=120)
    [reply] = fake.comments_on(PR)
    assert "/perf cancel" in reply["body"]
    assert all(row.done_at is not None for row in session.scalars(select(GithubOutbox)))


def test_a_push_while_a_perf_waits_for_github_is_measured_after_it(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(100, methods=("GET",), path=f"/pulls/{PR}")
    assert hook.comment(f"/perf {CASE}").state is DeliveryState.PENDING
    pushed = push(hook, fake)  # the PR moves from HEAD_SHA to NEW_HEAD meanwhile
    assert pushed.state is DeliveryState.PENDING
    assert pushed.outcome.startswith("waiting for delivery")
    fake.fail_next(0)
    asked, moved = carry_out(session, settings, github, later_s=20)
    assert asked.startswith("comparison ")
    assert moved.endswith("created on push, 1 superseded")
    old, new = comparisons(session)
    assert (old.head_sha, old.state) == (HEAD_SHA, ComparisonState.CANCELLED)  # the head the comment saw
    assert (new.head_sha, new.state) == (NEW_HEAD, ComparisonState.PENDING)
    assert new.command == f"/perf {CASE}"


def test_adding_the_perf_label_again_after_a_cancel_restarts(
    hook: Hook, session: Session, settings: Settings, fake: FakeGithub
) -> None:
    settings.github_perf_label = "run-perf"
    first = push(hook, fake, action="labeled", label="run-perf")
    assert first.outcome.endswith("created on label")
    assert hook.comment("/perf cancel").outcome.endswith("cancelled")
    again = push(hook, fake, action="labeled", label="run-perf")
    cancelled, restarted = comparisons(session)
    assert again.outcome == f"comparison {restarted.id} created on label"
    assert cancelled.state is ComparisonState.CANCELLED
    assert restarted.head_sha == cancelled.head_sha == NEW_HEAD
    # Added once more while it runs: that head is being measured already.
    assert push(hook, fake, action="labeled", label="run-perf").outcome == (
        "ignored: this head was measured already"
    )


def test_the_heads_status_stands_for_all_its_comparisons(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    for case in (CASE, "wan2.1-t2v-1.3b", "wan2.2-t2v-a14b"):
        hook.comment(f"/perf {case}")
    hook.comment("/perf cancel")  # the newest one only
    _first, second, third = comparisons(session)
    assert third.state is ComparisonState.CANCELLED
    assert fake.statuses[-1]["state"] == "pending"
    assert fake.statuses[-1]["description"] == "2 of 3 perf comparisons of this head running"
    assert fake.statuses[-1]["target_url"].endswith(f"/comparisons/{second.id}")
    hook.comment("/perf cancel")
    hook.comment("/perf cancel")
    assert fake.statuses[-1]["state"] == "error"
    assert {status["sha"] for status in fake.statuses} == {HEAD_SHA}
    assert {status["context"] for status in fake.statuses} == {"perftrack/perf"}
