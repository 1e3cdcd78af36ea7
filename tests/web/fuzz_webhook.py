"""The GitHub webhook under fuzzing, with bodies that pass the signature check.

Payloads are shaped like GitHub's ``issue_comment``, ``pull_request`` and ``ping`` events, each field
now and then missing, null or of the wrong type, plus arbitrary JSON, form-encoded ``payload=``
bodies and raw bytes. Every body is signed with the webhook secret (``X-Hub-Signature-256`` over the
exact bytes sent), and ``X-GitHub-Event`` / ``X-GitHub-Delivery`` vary (mismatched events, repeated,
empty and over-long delivery ids). GitHub is the project's fake (tests/fakes/fake_github.py), so a
delivery that reaches the bot gets the same answers every time.

No answer may be a 5xx, and every status must be one the OpenAPI schema declares for the webhook.
The bot may carry a delivery out after answering (a background task that logs what it cannot do):
an error logged while a delivery is handled counts as a server error too.
"""

from __future__ import annotations

import json
import logging
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes.fake_github import FakeGithub
from tests.web.campaign import Figures, bounded, first_line
from tracker.github.client import GithubClient
from tracker.github.webhook import sign
from web.api.github import get_github_client

URL = "/api/v1/github/webhook"
REPO = "sgl-project/sglang"
PULLS = (43650, 43601)
HEAD_SHA = "2" * 40
MERGE_BASE = "1" * 40
MAINTAINER = "maintainer-m"
EVENTS = ("issue_comment", "pull_request", "ping", "issues", "push", "installation", "")
_MISSING = object()  # a field left out of the payload

Json = Any


@dataclass(frozen=True)
class Delivery:
    """One signed webhook request."""

    event: str
    delivery_id: str
    content_type: str
    body: bytes

    def headers(self, secret: str) -> dict[str, str]:
        """The headers GitHub sends, signed with ``secret``."""
        return {
            "X-GitHub-Event": self.event,
            "X-GitHub-Delivery": self.delivery_id,
            "X-Hub-Signature-256": sign(secret, self.body),
            "Content-Type": self.content_type,
        }

    def report(self) -> str:
        """The exact request, for a finding's report."""
        return (
            f"X-GitHub-Event: {self.event!r}\nX-GitHub-Delivery: {self.delivery_id!r}\n"
            f"Content-Type: {self.content_type}\nbody: {self.body[:4000]!r}"
        )


_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), st.just(2**64)
)
_any_json: st.SearchStrategy[Json] = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
_wrong_type = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=12),
    st.lists(_scalars, max_size=2),
    st.dictionaries(st.text(max_size=6), _scalars, max_size=2),
)
# About one field in seven broken: of the ten fields that matter, one or two are usually wrong.
_HOW = ("valid",) * 16 + ("missing", "null", "wrong")


def _shaky(valid: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    """Mostly ``valid``; sometimes missing, null or of another JSON type."""
    choices: dict[str, st.SearchStrategy[Json]] = {
        "valid": valid,
        "missing": st.just(_MISSING),
        "null": st.none(),
        "wrong": _wrong_type,
    }
    return st.sampled_from(_HOW).flatmap(choices.__getitem__)


def _object(**fields: st.SearchStrategy[Json]) -> st.SearchStrategy[dict[str, Json]]:
    """A JSON object whose every field is :func:`_shaky`."""
    shaky = st.fixed_dictionaries({name: _shaky(value) for name, value in fields.items()})
    return shaky.map(lambda drawn: {name: value for name, value in drawn.items() if value is not _MISSING})


def _mostly(usual: st.SearchStrategy[Json], odd: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    """``usual`` four times in five, else ``odd``."""
    return st.sampled_from((True,) * 4 + (False,)).flatmap(lambda pick: usual if pick else odd)


def _or_text(*values: Json) -> st.SearchStrategy[Json]:
    return _mostly(st.sampled_from(values), st.text(max_size=40))


_numbers = _mostly(st.sampled_from(PULLS), st.integers(min_value=-(2**64), max_value=2**64))
_user = _object(
    login=_or_text(MAINTAINER, "trusted-friend", "stranger", "perftrack[bot]"), type=_or_text("User", "Bot")
)
_repository = _object(full_name=_or_text(REPO, "someone/else"), name=_or_text("sglang"))
_installation = _object(id=st.sampled_from([7001]) | st.integers())
_commands = _mostly(
    st.sampled_from(
        [
            "/perf",
            "/perf help",
            "/perf cancel",
            "/perf qwen-image-t2i-1024 on H200 rounds 2",
            "/perf qwen-image-* on H200,GB300 with #43601",
            "/perf rounds 99999999999999999999",
            "/perf with #-1 #99999999999999999999",
            "/perf no-such-case on NOPE",
            "looks good to me",
        ]
    ),
    st.text(max_size=60).map(lambda text: f"/perf {text}"),
)
_issue_comment = _object(
    action=_or_text("created", "created", "created", "edited", "deleted"),
    issue=_object(
        number=_numbers,
        html_url=st.text(max_size=40),
        pull_request=_object(html_url=st.text(max_size=40), url=st.text(max_size=40)),
    ),
    comment=_object(id=st.integers(min_value=1, max_value=2**53), body=_commands, user=_user),
    repository=_repository,
    installation=_installation,
    sender=_user,
)
_pull_request = _object(
    action=_or_text("synchronize", "synchronize", "labeled", "labeled", "closed", "opened"),
    number=_numbers,
    pull_request=_object(
        number=_numbers,
        state=_or_text("open", "closed"),
        html_url=st.text(max_size=40),
        head=_object(sha=_or_text(HEAD_SHA, "3" * 40), ref=st.text(max_size=20)),
        base=_object(ref=_or_text("main"), sha=_or_text(MERGE_BASE)),
        labels=st.lists(_object(name=_or_text("perf", "bug")), max_size=3),
    ),
    label=_object(name=_or_text("perf", "bug")),
    repository=_repository,
    installation=_installation,
    sender=_user,
)
_ping = _object(
    zen=st.text(max_size=40),
    hook_id=st.integers(),
    hook=_object(type=_or_text("Repository", "App"), events=st.lists(st.text(max_size=12), max_size=3)),
    repository=_repository,
)
_PAYLOADS: dict[str, st.SearchStrategy[Json]] = {
    "issue_comment": _issue_comment,
    "pull_request": _pull_request,
    "ping": _ping,
    "arbitrary": _any_json,
}
_DELIVERY_IDS = ("72d3162e-cc78-11e3-81ab-4c9367dc0958", "repeated-delivery", "x" * 64)
FRESH = "(fresh)"  # replaced by an id no other delivery of the campaign has


@st.composite
def deliveries(draw: st.DrawFn) -> Delivery:
    """A signed delivery: an event-shaped (or arbitrary) payload, encoded one way or another."""
    kind = draw(st.sampled_from(list(_PAYLOADS)))
    payload = draw(_PAYLOADS[kind])
    named = kind if kind != "arbitrary" else "issue_comment"
    event = draw(_mostly(st.just(named), st.sampled_from(EVENTS) | _header_text))
    delivery_id = draw(_mostly(st.just(FRESH), st.sampled_from(_DELIVERY_IDS) | _header_text))
    encoding = draw(st.sampled_from(("json",) * 4 + ("form", "bytes")))
    if encoding == "form":
        body = urlencode({"payload": json.dumps(payload)}).encode()
        content_type = "application/x-www-form-urlencoded"
    elif encoding == "bytes":
        body = draw(st.binary(max_size=64))
        content_type = "application/json"
    else:
        body = json.dumps(payload).encode()
        content_type = "application/json"
    return Delivery(event=event, delivery_id=delivery_id, content_type=content_type, body=body)


def fake_github() -> FakeGithub:
    """GitHub with the pull requests the payloads name and one maintainer with write access."""
    fake = FakeGithub()
    for number in PULLS:
        fake.add_pull(REPO, number, head_sha=HEAD_SHA, merge_base=MERGE_BASE)
    fake.permissions[(REPO, MAINTAINER)] = "write"
    return fake


@contextmanager
def faked_github(app: FastAPI) -> Iterator[FakeGithub]:
    """The app's webhook talks to a fresh fake GitHub (no retries, no sleeping) while in the block."""
    fake = fake_github()
    client = GithubClient(
        token="ghp_fuzz_token", transport=fake.transport(), attempts=1, sleep=lambda _s: None
    )
    app.dependency_overrides[get_github_client] = lambda: client
    try:
        yield fake
    finally:
        app.dependency_overrides.pop(get_github_client, None)
        client.close()


def declared_statuses(app: FastAPI) -> set[int]:
    """The statuses the OpenAPI schema declares for the webhook."""
    responses = app.openapi()["paths"][URL]["post"]["responses"]
    return {int(code) for code in responses if code.isdigit()}


def run_webhook_campaign(app: FastAPI, *, secret: str, max_examples: int, seed_value: int = 0) -> Figures:
    """Send ``max_examples`` signed deliveries; collect 5xx answers and undeclared statuses."""
    figures = Figures(title="GitHub webhook (signed payloads)", operations=1)
    declared = declared_statuses(app)
    with faked_github(app), TestClient(app) as client:
        send = _sender(client, secret, declared, figures)

        @bounded(max_examples, seed_value)
        @given(delivery=deliveries())
        def exercise(delivery: Delivery) -> None:
            send(delivery)

        exercise()
    return figures.stop()


class _Errors(logging.Handler):
    """Collects the records of ERROR and above logged while it is installed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _logged_errors() -> Iterator[_Errors]:
    handler = _Errors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def _sender(
    client: TestClient, secret: str, declared: set[int], figures: Figures
) -> Callable[[Delivery], None]:
    def send(delivery: Delivery) -> None:
        with _logged_errors() as logged:
            _send(delivery)
        for record in logged.records:
            figures.statuses[500] += 1
            text = logging.Formatter().format(record)
            figures.found(
                f"POST {URL} [{delivery.event[:20]}] logged: {record.getMessage()[:120]}",
                f"{delivery.report()}\n\n{text[-3000:]}",
            )

    def _send(delivery: Delivery) -> None:
        figures.examples += 1
        if delivery.delivery_id == FRESH:
            delivery = replace(delivery, delivery_id=f"fuzz-{uuid.uuid4()}")
        label = f"POST {URL} [{delivery.event[:20]}]"
        try:
            response = client.post(URL, content=delivery.body, headers=delivery.headers(secret))
        except Exception as error:  # an exception out of the app is a 500
            figures.statuses[500] += 1
            tail = "".join(traceback.format_exception(error)[-6:])
            figures.found(
                f"{label} 500 {type(error).__name__}: {first_line(error)}", f"{delivery.report()}\n\n{tail}"
            )
            return
        figures.statuses[response.status_code] += 1
        if response.status_code >= 500 or response.status_code not in declared:
            figures.found(
                f"{label} {response.status_code} {response.text[:120]}",
                f"{delivery.report()}\n\n{response.text}",
            )

    return send
