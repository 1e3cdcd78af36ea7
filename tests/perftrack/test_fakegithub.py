"""The fake GitHub in the product (perftrack.fakegithub), as the demo uses it: a comment it keeps
becomes a delivery GitHub's webhook description accepts, signed so that the tracker verifies it and
reads it as the comment it is; and served over HTTP, its App flow works against a wall clock."""

from __future__ import annotations

import datetime as dt
import json

from perftrack.demo.github import MAINTAINER, REPOSITORY, new_app_key
from perftrack.fakegithub.deliveries import comment_delivery, signature
from tests.fakes.fake_github import FakeGithub
from tests.fakes.github_contract import event_problems
from tracker.github.client import GithubClient
from tracker.github.events import CommentEvent, read_event
from tracker.github.webhook import signature_valid

HEAD = "a" * 40
BASE = "b" * 40


def test_a_posted_comment_is_delivered_as_github_describes_it_and_the_bot_reads_it() -> None:
    fake = FakeGithub(app_public_key="unused")
    fake.add_pull(REPOSITORY, 102, head_sha=HEAD, merge_base=BASE)
    comment = fake.post_comment(REPOSITORY, 102, "/perf toy-dit-* with #101", MAINTAINER)
    payload = comment_delivery(fake, REPOSITORY, 102, comment)
    assert event_problems("issue_comment", payload) == []
    event = read_event("issue_comment", payload)
    assert isinstance(event, CommentEvent)
    assert (event.repository, event.pr_number, event.author, event.body) == (
        REPOSITORY,
        102,
        MAINTAINER,
        "/perf toy-dit-* with #101",
    )
    assert event.installation_id == fake.installation_id
    assert [kept["body"] for kept in fake.comments_on(102)] == ["/perf toy-dit-* with #101"]
    body = json.dumps(payload).encode()
    assert signature_valid("s3cret", body, signature("s3cret", body))
    assert not signature_valid("other", body, signature("s3cret", body))


def test_with_a_clock_the_app_tokens_follow_the_wall_clock() -> None:
    key = new_app_key()
    now = dt.datetime.now(dt.UTC)
    fake = FakeGithub(app_public_key=key.public_pem, clock=lambda: now)
    client = GithubClient(
        api_url="https://github.invalid", app_id=7, private_key=key.private_pem, transport=fake.transport()
    )
    assert client.request("GET", f"/repos/{REPOSITORY}", repository=REPOSITORY)["full_name"] == REPOSITORY
    [answer] = [exchange.answer for exchange in fake.exchanges if exchange.path.endswith("/access_tokens")]
    expires = dt.datetime.fromisoformat(answer["expires_at"].replace("Z", "+00:00"))
    assert dt.timedelta(minutes=59) < expires - now <= dt.timedelta(hours=1)
