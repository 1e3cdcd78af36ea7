"""The demo's webhook receiver: it takes what the tracker sends (the bodies and headers of
tracker.notifications.bodies.render), checks a generic delivery's signature and keeps a bad one as a
failure; served on a localhost thread as the demo runs it."""

from __future__ import annotations

import httpx

from perftrack.demo.receiver import JSON_PATH, SLACK_PATH, receiving
from tracker.enums import NotificationEvent, NotificationFormat, NotificationSubject
from tracker.notifications.bodies import Outgoing, render

SECRET = "receiver-secret-for-tests"


def outgoing(kind: NotificationFormat, *, secret: str | None = SECRET) -> Outgoing:
    return Outgoing(
        row_id=1,
        delivery="d-1",
        event=NotificationEvent.NIGHTLY_SUMMARY,
        subject_kind=NotificationSubject.NIGHTLY_RUN,
        subject_id=3,
        payload={"title": "Nightly 3: 2 jobs, 1 change", "lines": ["second line"], "path": "/nights/3"},
        url="http://unused.invalid",
        format=kind,
        secret=secret,
    )


def post(url: str, path: str, sent: Outgoing) -> int:
    body, headers = render(sent)
    return httpx.post(url + path, content=body, headers=headers, timeout=10).status_code


def test_the_receiver_keeps_what_the_tracker_sends_and_checks_its_signature() -> None:
    with receiving(SECRET) as (url, inbox):
        assert post(url, SLACK_PATH, outgoing(NotificationFormat.SLACK)) == 200
        assert post(url, JSON_PATH, outgoing(NotificationFormat.JSON)) == 200
        got = inbox.snapshot()
    assert [(item.path, item.event, item.title, item.verified) for item in got] == [
        (SLACK_PATH, "nightly.summary", "Nightly 3: 2 jobs, 1 change", None),
        (JSON_PATH, "nightly.summary", "Nightly 3: 2 jobs, 1 change", True),
    ]


def test_a_wrong_or_missing_signature_is_refused_and_kept_as_a_failure() -> None:
    with receiving(SECRET) as (url, inbox):
        other_key = Outgoing(**{**outgoing(NotificationFormat.JSON).__dict__, "secret": "another-secret"})
        assert post(url, JSON_PATH, other_key) == 401
        assert post(url, JSON_PATH, outgoing(NotificationFormat.JSON, secret=None)) == 401
        assert httpx.post(url + "/elsewhere", content=b"{}", timeout=10).status_code == 404
        got = inbox.snapshot()
    assert [item.verified for item in got] == [False, False]
