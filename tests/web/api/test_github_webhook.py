"""The GitHub webhook end to end, against a fake GitHub: signatures, redelivery, permissions,
helpful replies, a /perf comparison reported in one comment edited in place with a commit status,
outbox retries, cancel.

The webhook stores a delivery and answers; the bot carries it out right after (a background task,
which the test client runs before returning), so each test reads what the bot did from the
delivery's row (:attr:`Delivered.outcome`)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import job_result
from tests.fakes import github_shapes
from tests.fakes.fake_github import FakeGithub
from tests.tracker.comparisons.test_comparisons import LIMITS, T0, Outcome, drive, planted, runner
from tracker.catalog.cases import list_current_cases
from tracker.enums import Arm, ComparisonState, DeliveryState
from tracker.github import outbox
from tracker.github.client import GithubClient
from tracker.github.inbox import process_pending
from tracker.github.outbox import FlushReport, flush_outbox
from tracker.github.render import marker
from tracker.github.webhook import sign
from tracker.models import Comparison, GithubDelivery, GithubOutbox, Job, utcnow
from tracker.settings import Settings
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result
from web.api.github import get_github_client
from web.deps import get_settings

pytestmark = pytest.mark.dialect

DATA = Path(__file__).resolve().parents[2] / "data" / "github"
SECRET = "whsec-test-0123456789"
REPO = "sgl-project/sglang"
PR = 43650
MERGE_BASE = "1" * 40
HEAD_SHA = "2" * 40
URL = "/api/v1/github/webhook"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "github_webhook_secret": SecretStr(SECRET),
            "public_url": "https://perftrack.example.org",
            "github_allowed_users": ["trusted-friend"],
        }
    )


@pytest.fixture
def fake() -> FakeGithub:
    fake = FakeGithub()
    fake.add_pull(REPO, PR, head_sha=HEAD_SHA, merge_base=MERGE_BASE)
    fake.add_pull(REPO, 43601, head_sha="3" * 40, merge_base=MERGE_BASE)
    fake.permissions[(REPO, "maintainer-m")] = "write"
    return fake


@pytest.fixture
def github(fake: FakeGithub) -> Iterator[GithubClient]:
    client = GithubClient(
        token="ghp_test_token", transport=fake.transport(), attempts=2, sleep=lambda _s: None
    )
    yield client
    client.close()


@pytest.fixture
def api(client: TestClient, github: GithubClient) -> TestClient:
    client.app.dependency_overrides[get_github_client] = lambda: github  # type: ignore[attr-defined]
    return client


@dataclass(frozen=True)
class Delivered:
    """The webhook's answer, and what the bot then did (the delivery row's outcome and state)."""

    status_code: int
    answer: dict[str, Any]
    outcome: str
    state: DeliveryState | None


class Hook:
    """Sends signed deliveries; each gets a new delivery id unless told."""

    def __init__(self, api: TestClient, session: Session) -> None:
        self.api = api
        self.session = session
        self.count = 0

    def comment(
        self, body: str, *, user: str = "maintainer-m", delivery: str | None = None, state: str = "open"
    ) -> Delivered:
        payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
        payload["comment"]["body"] = body
        payload["comment"]["user"]["login"] = user
        payload["comment"]["id"] += self.count
        payload["issue"]["state"] = state
        return self.send("issue_comment", payload, delivery=delivery)

    def send(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        delivery: str | None = None,
        signature: str | None = "ok",
    ) -> Delivered:
        self.count += 1
        raw = json.dumps(payload).encode()
        delivery = delivery or f"delivery-{self.count}"
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
        }
        if signature == "ok":
            headers["X-Hub-Signature-256"] = sign(SECRET, raw)
        elif signature is not None:
            headers["X-Hub-Signature-256"] = signature
        return self.delivered(self.api.post(URL, content=raw, headers=headers), delivery)

    def delivered(self, answer: Any, delivery: str) -> Delivered:
        self.session.expire_all()
        row = self.session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == delivery))
        body = answer.json()
        outcome = row.outcome if row is not None else body.get("outcome", body.get("detail", ""))
        return Delivered(answer.status_code, body, outcome, row.state if row is not None else None)


@pytest.fixture
def hook(api: TestClient, session: Session) -> Hook:
    return Hook(api, session)


def comparisons(session: Session) -> list[Comparison]:
    session.expire_all()
    return list(session.scalars(select(Comparison).where(Comparison.pr_number == PR).order_by(Comparison.id)))


def carry_out(session: Session, settings: Settings, github: GithubClient, later_s: float = 0) -> list[str]:
    """The scheduler's turn at the pending deliveries, ``later_s`` from now."""
    sessions = sessionmaker(bind=session.connection(), join_transaction_mode="create_savepoint")
    return process_pending(
        sessions=sessions,
        read_sessions=sessions,
        settings=settings,
        client=github,
        now=utcnow() + dt.timedelta(seconds=later_s),
    )


def flush(session: Session, settings: Settings, github: GithubClient, later_s: float = 0) -> FlushReport:
    return flush_outbox(
        session=session, settings=settings, client=github, now=utcnow() + dt.timedelta(seconds=later_s)
    )


def test_unsigned_or_wrongly_signed_deliveries_are_refused_and_nothing_is_stored(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    for signature in (None, "sha256=" + "0" * 64, "sha1=abc", sign("another-secret", b"{}")):
        answer = hook.send("issue_comment", payload, signature=signature)
        assert answer.status_code == 401
    # Not even JSON is parsed before the signature is checked.
    raw = b"{not json"
    answer = hook.api.post(URL, content=raw, headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "x"})
    assert answer.status_code == 401
    assert session.scalar(select(func.count()).select_from(GithubDelivery)) == 0
    assert comparisons(session) == []
    assert fake.calls == []


def test_without_a_secret_the_webhook_says_it_is_not_set_up(api: TestClient, settings: Settings) -> None:
    unset = settings.model_copy(update={"github_webhook_secret": None})
    api.app.dependency_overrides[get_settings] = lambda: unset  # type: ignore[attr-defined]
    answer = api.post(URL, content=b"{}", headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d"})
    assert answer.status_code == 503
    assert "PERFTRACK_GITHUB_WEBHOOK_SECRET" in answer.json()["detail"]


def test_ping_and_other_events(hook: Hook) -> None:
    assert hook.send("ping", json.loads((DATA / "ping.json").read_text())).answer == {"outcome": "pong"}
    answer = hook.send("issues", json.loads((DATA / "issues_opened.json").read_text()))
    assert answer.status_code == 202
    assert answer.answer == {"outcome": "ignored"}


def test_a_comment_without_a_command_does_nothing(hook: Hook, session: Session, fake: FakeGithub) -> None:
    answer = hook.comment("LGTM, thanks!")
    assert answer.status_code == 200
    assert answer.outcome == "ignored: no /perf command"
    assert fake.calls == []


def test_redelivery_is_handled_once(hook: Hook, session: Session, fake: FakeGithub) -> None:
    first = hook.comment("/perf qwen-image-t2i-1024", delivery="abc-123")
    again = hook.comment("/perf qwen-image-t2i-1024", delivery="abc-123")
    assert first.status_code == 202
    assert first.answer == {"outcome": "queued"}
    assert first.outcome.startswith("comparison ")
    assert again.status_code == 200
    assert again.answer == {"outcome": "already handled"}
    assert len(comparisons(session)) == 1
    assert len(fake.comments_on(PR)) == 1


def test_users_without_write_access_get_a_polite_refusal(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    answer = hook.comment("/perf", user="drive-by")
    assert answer.outcome == "refused: drive-by may not run /perf"
    assert comparisons(session) == []
    [reply] = fake.comments_on(PR)
    assert "Sorry @drive-by" in reply["body"]
    assert "write access" in reply["body"]


def test_the_allow_list_lets_a_user_in_without_write_access(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    answer = hook.comment("/perf qwen-image-t2i-1024", user="trusted-friend")
    assert answer.outcome.startswith("comparison ")
    assert fake.calls_to("GET", "/permission") == []


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/perf flux-schnell", ["unknown case `flux-schnell`", "qwen-image-t2i-1024", "wan2.2-t2v-a14b"]),
        ("/perf qwen-image-t2i-1024 on A100", ["unknown hardware `A100`", "GB300", "H200"]),
        ("/perf qwen-image-t2i-1024 on GB300", ["does not run on GB300", "runs on H200"]),
        ("/perf qwen-image-t2i-1024 with #99999", ["#99999 does not exist"]),
        ("/perf qwen-image-t2i-1024 rounds many", ["whole number", "/perf help"]),
        # What the user typed comes back inside a code span nothing in it can close.
        ("/perf <img src=x>`a`", ["unknown case `<img`, `` src=x>`a` ``"]),
        ("/perf qwen-image-t2i-1024 rounds <b>", ["not `<b>`"]),
    ],
)
def test_wrong_commands_get_a_helpful_reply(
    hook: Hook, session: Session, fake: FakeGithub, command: str, expected: list[str]
) -> None:
    answer = hook.comment(command)
    assert answer.status_code == 202
    assert comparisons(session) == []
    [reply] = fake.comments_on(PR)
    for fragment in expected:
        assert fragment in reply["body"]


def test_help(hook: Hook, fake: FakeGithub) -> None:
    hook.comment("/perf help")
    [reply] = fake.comments_on(PR)
    assert "/perf cancel" in reply["body"]
    assert [reaction["content"] for reaction in fake.reactions] == ["+1"]


def test_a_bare_perf_on_files_no_case_names_measures_every_case(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    fake.pull_files[(REPO, PR)] = [{"filename": "docs/diffusion/index.md", "status": "modified"}]
    hook.comment("/perf")
    [comparison] = comparisons(session)
    expected = {
        case.slug
        for case in list_current_cases(session=session)
        if case.repository_id == comparison.repository_id
    }
    assert {result.case.slug for result in comparison.results} == expected
    assert "none of the 1 files this PR touches selects a case" in comparison.case_selection
    [comment] = fake.comments_on(PR)
    assert "- Cases: none of the 1 files" in comment["body"]


QWEN_DIT = "python/sglang/multimodal_gen/runtime/models/dits/qwen_image.py"


def test_a_bare_perf_measures_the_cases_of_the_files_the_pr_touches(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    # 130 files: the list comes in two pages; the model file is on the second one, renamed.
    fake.pull_files[(REPO, PR)] = [
        *({"filename": f"docs/page-{index}.md", "status": "added"} for index in range(120)),
        {"filename": "python/sglang/multimodal_gen/test/x.txt", "status": "added"},
        {
            "filename": "python/sglang/multimodal_gen/runtime/models/dits/qwen_image_new.py",
            "previous_filename": QWEN_DIT,
            "status": "renamed",
        },
        *({"filename": f"docs/more-{index}.md", "status": "added"} for index in range(8)),
    ]
    hook.comment("/perf rounds 2")
    [comparison] = comparisons(session)
    assert {result.case.slug for result in comparison.results} == {
        "qwen-image-t2i-1024",
        "qwen-image-2.1-serve-gb300",
    }
    assert len(fake.calls_to("GET", f"/pulls/{PR}/files")) == 2
    assert "chosen from the 131 files this PR touches" in comparison.case_selection
    [comment] = fake.comments_on(PR)
    assert (
        "`qwen-image-t2i-1024` (`python/sglang/multimodal_gen/runtime/models/dits/qwen_image_new.py`)"
        in (comment["body"])
    )


def test_file_names_in_the_case_selection_cannot_break_out_of_their_code_span(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hostile = "python/sglang/multimodal_gen/runtime/models/dits/qwen_image`<img src=x onerror=alert(1)>`.py"
    fake.pull_files[(REPO, PR)] = [{"filename": hostile, "status": "added"}]
    hook.comment("/perf")
    [comparison] = comparisons(session)
    assert f"``{hostile}``" in comparison.case_selection
    [comment] = fake.comments_on(PR)
    assert f"``{hostile}``" in comment["body"]


def test_shared_code_selects_every_case_and_hardware_narrows_the_choice(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    fake.pull_files[(REPO, PR)] = [
        {
            "filename": "python/sglang/multimodal_gen/runtime/layers/attention/backends/fa3.py",
            "status": "modified",
        }
    ]
    hook.comment("/perf on GB300")
    [comparison] = comparisons(session)
    assert {result.case.slug for result in comparison.results} == {
        "qwen-image-2.1-serve-gb300",
        "flux1-dev-serve-gb300",
        "z-image-turbo-serve-gb300",
    }
    assert {result.hardware_kind.name for result in comparison.results} == {"GB300"}


def test_named_cases_do_not_look_at_the_files(hook: Hook, session: Session, fake: FakeGithub) -> None:
    hook.comment("/perf wan*")
    [comparison] = comparisons(session)
    assert {result.case.slug for result in comparison.results} == {"wan2.2-t2v-a14b", "wan2.1-t2v-1.3b"}
    assert comparison.case_selection == "named in the command"
    assert not fake.calls_to("GET", "/files")


def _with_flushes(
    session: Session, settings: Settings, github: GithubClient, outcome: Callable[[Job], Outcome]
) -> Callable[[Job], Outcome]:
    """Flush the outbox before each job runs, as the periodic flush would between runs."""

    def run(job: Job) -> Outcome:
        flush(session, settings, github)
        return outcome(job)

    return run


@pytest.mark.parametrize(("change_pct", "final_state"), [(10.0, "failure"), (0.0, "success")])
def test_perf_compares_the_pr_on_its_merge_base_and_reports_in_one_comment(
    hook: Hook,
    session: Session,
    settings: Settings,
    github: GithubClient,
    fake: FakeGithub,
    change_pct: float,
    final_state: str,
) -> None:
    answer = hook.comment("Please measure.\n/perf qwen-image-t2i-1024 on H200 rounds 2 with #43601")
    assert answer.status_code == 202
    [comparison] = comparisons(session)
    assert comparison.github_repository == REPO
    assert comparison.head_sha == HEAD_SHA
    assert comparison.requested_by == "maintainer-m"
    assert comparison.command == "/perf qwen-image-t2i-1024 on H200 rounds 2 with #43601"
    assert comparison.pr_url == f"https://github.com/{REPO}/pull/{PR}"
    base, head = comparison.base_candidate, comparison.head_candidate
    assert base.base_commit.sha == head.base_commit.sha == MERGE_BASE
    # Each pull request pinned to the head it had when the command was read.
    stacked = f"refs/pull/43601/head@{'3' * 40}"
    assert [patch.ref for patch in base.patches] == [stacked]
    assert [patch.ref for patch in head.patches] == [stacked, f"refs/pull/{PR}/head@{HEAD_SHA}"]
    assert [patch.pr_number for patch in head.patches] == [43601, PR]

    # The background flush after the webhook posted the comment, the reaction and a pending status.
    [comment] = fake.comments_on(PR)
    assert marker(comparison.id) in comment["body"]
    assert "queued" in comment["body"]
    assert "#43601" in comment["body"]
    assert f"#{PR} at `{HEAD_SHA[:10]}`" in comment["body"]  # the head measured, for everyone to see
    assert comparison.github_comment_id == comment["id"]
    assert [reaction["content"] for reaction in fake.reactions] == ["eyes"]
    assert [status["state"] for status in fake.statuses] == ["pending"]
    assert fake.statuses[0]["context"] == "perftrack/perf"
    assert fake.statuses[0]["target_url"] == f"https://perftrack.example.org/comparisons/{comparison.id}"

    drive(session, _with_flushes(session, settings, github, planted(change_pct)))
    flush(session, settings, github)

    [comment] = fake.comments_on(PR)  # still one comment, edited in place
    assert comment["edits"] >= 2
    session.refresh(comparison)
    assert comparison.state is ComparisonState.DONE
    verdict = "regression" if final_state == "failure" else "no change"
    assert verdict in comment["body"]
    assert "done" in comment["body"]
    assert "| `qwen-image-t2i-1024` |" in comment["body"]
    assert "#### H200" in comment["body"]
    assert "https://perftrack.example.org/runs/" in comment["body"]
    states = [status["state"] for status in fake.statuses]
    assert states[0] == "pending"
    assert states[-1] == final_state
    assert {status["sha"] for status in fake.statuses} == {HEAD_SHA}
    assert all(row.done_at is not None for row in session.scalars(select(GithubOutbox)))


def test_compile_counters_show_when_they_differ(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    hook.comment("/perf qwen-image-t2i-1024")
    agent = runner(session)
    while (job := workflow_jobs.claim(session=session, runner=agent, now=T0)) is not None:
        breaks = 120 if job.arm is Arm.HEAD else 0
        value = 33.0 if job.arm is Arm.HEAD else 30.0
        result = job_result(job.attempts, step_times_ms=[value] * 3, compile={"graph_breaks": breaks})
        store_job_result(session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0)
    flush(session, settings, github)
    [comment] = fake.comments_on(PR)
    assert "graph breaks 0 → 120" in comment["body"]


def test_outbox_retries_after_github_fails(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(100, methods=("POST", "PATCH"))  # reads work, every write answers 502
    assert hook.comment("/perf qwen-image-t2i-1024").status_code == 202
    rows = list(session.scalars(select(GithubOutbox).order_by(GithubOutbox.id)))
    assert [row.kind for row in rows] == ["reaction", "comment", "status"]
    for row in rows:
        assert row.done_at is None
        assert row.attempts == 1
        assert row.last_error is not None
        assert "502" in row.last_error
        assert "ghp_test_token" not in row.last_error
        assert row.next_attempt_at is not None
    assert fake.comments_on(PR) == []

    fake.fail_next(0)
    assert flush(session, settings, github) == FlushReport()  # not due yet: backoff
    assert flush(session, settings, github, later_s=120) == FlushReport(sent=3)
    assert len(fake.comments_on(PR)) == 1
    assert len(fake.statuses) == 1
    assert len(fake.reactions) == 1
    [comparison] = comparisons(session)
    assert comparison.github_comment_id == fake.comments_on(PR)[0]["id"]


def test_a_write_github_refuses_for_good_is_given_up_and_can_be_revived(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(3, methods=("POST",), status=422, path="/reactions")  # refused three times
    assert hook.comment("/perf qwen-image-t2i-1024").status_code == 202
    [reaction] = session.scalars(select(GithubOutbox).where(GithubOutbox.kind == "reaction")).all()
    assert reaction.refusals == 1
    assert reaction.dead_at is None
    assert len(fake.comments_on(PR)) == 1  # the other writes went through
    assert flush(session, settings, github, later_s=120) == FlushReport(failed=1)
    report = flush(session, settings, github, later_s=3600)
    assert report.dead == 1
    session.refresh(reaction)
    assert reaction.dead_at is not None
    assert "422" in (reaction.last_error or "")
    assert reaction not in outbox.pending(session=session)
    assert flush(session, settings, github, later_s=7 * 86400) == FlushReport()  # never tried again
    assert fake.reactions == []

    outbox.revive(session=session, row_id=reaction.id)
    assert flush(session, settings, github) == FlushReport(sent=1)
    assert [item["content"] for item in fake.reactions] == ["eyes"]


def test_a_server_error_never_kills_a_row(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(1000, methods=("POST", "PATCH"))  # 502 for a long time
    assert hook.comment("/perf qwen-image-t2i-1024").status_code == 202
    for day in range(1, 6):
        flush(session, settings, github, later_s=day * 86400)
    rows = list(session.scalars(select(GithubOutbox)))
    assert all(row.dead_at is None and row.done_at is None for row in rows)
    assert all(row.attempts >= 5 for row in rows)


def test_a_lost_comment_id_is_found_again_by_its_marker(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    hook.comment("/perf qwen-image-t2i-1024")
    [comparison] = comparisons(session)
    comparison.github_comment_id = None
    session.commit()
    drive(session, planted(10.0))
    flush(session, settings, github)
    [comment] = fake.comments_on(PR)
    assert comment["edits"] == 1
    session.refresh(comparison)
    assert comparison.github_comment_id == comment["id"]


def test_perf_cancel(hook: Hook, session: Session, fake: FakeGithub) -> None:
    hook.comment("/perf qwen-image-t2i-1024")
    answer = hook.comment("/perf cancel")
    [comparison] = comparisons(session)
    assert answer.outcome == f"comparison {comparison.id} cancelled"
    assert comparison.state is ComparisonState.CANCELLED
    [comment] = fake.comments_on(PR)
    assert "cancelled" in comment["body"]
    assert [status["state"] for status in fake.statuses] == ["pending", "error"]
    assert [reaction["content"] for reaction in fake.reactions] == ["eyes", "+1"]
    again = hook.comment("/perf cancel")
    assert again.outcome == "cancel: nothing to cancel"


NEW_HEAD = "4" * 40


def pushed(*, head: str = NEW_HEAD, sender: str = "maintainer-m", fork: bool = False) -> dict[str, Any]:
    """A ``synchronize`` payload: ``sender`` pushed ``head`` to a branch of the repository (or a fork)."""
    payload: dict[str, Any] = json.loads((DATA / "pull_request_synchronize.json").read_text())
    payload["pull_request"]["head"]["sha"] = head
    if not fork:
        payload["pull_request"]["head"]["repo"]["full_name"] = REPO
    payload["sender"]["login"] = sender
    return payload


def push(
    hook: Hook,
    fake: FakeGithub,
    *,
    action: str = "synchronize",
    label: str | None = None,
    sender: str = "maintainer-m",
    fork: bool = False,
) -> Delivered:
    """The PR's head moves to NEW_HEAD (or a label is added): a signed ``pull_request`` delivery."""
    fake.add_pull(REPO, PR, head_sha=NEW_HEAD, merge_base=MERGE_BASE)
    payload = pushed(sender=sender, fork=fork)
    payload["action"] = action
    if label is not None:
        payload["label"] = github_shapes.label(REPO, label)
        payload["pull_request"]["labels"].append(github_shapes.label(REPO, label))
    return hook.send("pull_request", payload)


def test_the_rounds_added_while_inconclusive_stop_at_the_operators_cap(
    hook: Hook, session: Session, settings: Settings
) -> None:
    settings.github_max_rounds = 3
    hook.comment("/perf qwen-image-t2i-1024 rounds 2")
    hook.comment("/perf qwen-image-t2i-1024 rounds 5")
    capped, asked_for_more = comparisons(session)
    assert (capped.rounds, capped.max_rounds) == (2, 3)
    assert (asked_for_more.rounds, asked_for_more.max_rounds) == (5, 5)  # the rounds asked for still run


def test_a_push_re_runs_the_last_command_on_the_new_head_and_cancels_the_old_one(
    hook: Hook, session: Session, fake: FakeGithub
) -> None:
    hook.comment("/perf qwen-image-t2i-1024 rounds 4 with #43601")
    answer = push(hook, fake)
    assert answer.status_code == 202
    old, new = comparisons(session)
    assert answer.outcome == f"comparison {new.id} created on push, 1 superseded"
    assert old.state is ComparisonState.CANCELLED
    assert new.head_sha == NEW_HEAD
    assert new.command == "/perf qwen-image-t2i-1024 rounds 4 with #43601"
    assert new.requested_by == "maintainer-m"  # the pusher, whose write access was checked
    assert new.rounds == 4
    assert [patch.ref for patch in new.head_candidate.patches] == [
        f"refs/pull/43601/head@{'3' * 40}",
        f"refs/pull/{PR}/head@{NEW_HEAD}",
    ]
    assert "re-run on push" in new.case_selection
    bodies = [comment["body"] for comment in fake.comments_on(PR)]
    assert len(bodies) == 2  # the old comparison's comment (now cancelled) and the new one
    assert "cancelled" in bodies[0]
    assert "superseded" in bodies[0]
    assert {status["sha"] for status in fake.statuses} == {HEAD_SHA, NEW_HEAD}
    # The same push delivered again (a new delivery id) does not measure the head twice.
    again = push(hook, fake)
    assert again.outcome == "ignored: this head was measured already"
    assert len(comparisons(session)) == 2


def test_a_push_to_a_pr_that_never_asked_does_nothing(hook: Hook, session: Session) -> None:
    payload = pushed()
    answer = hook.send("pull_request", payload)
    assert answer.status_code == 202
    assert answer.outcome == "ignored: the pull request never asked for /perf"
    assert comparisons(session) == []
    closed = copy.deepcopy(payload)
    closed["action"] = "closed"
    assert hook.send("pull_request", closed).outcome == "cancel: nothing to cancel"


def test_re_run_on_push_can_be_turned_off(
    hook: Hook, session: Session, fake: FakeGithub, settings: Settings
) -> None:
    hook.comment("/perf qwen-image-t2i-1024")
    settings.github_rerun_on_push = False
    answer = push(hook, fake)
    assert answer.outcome == "ignored: the pull request never asked for /perf"
    assert len(comparisons(session)) == 1


def test_the_perf_label_measures_a_pr_when_added_and_on_every_push(
    hook: Hook, session: Session, fake: FakeGithub, settings: Settings
) -> None:
    settings.github_perf_label = "run-perf"
    settings.github_rerun_on_push = False
    fake.pull_files[(REPO, PR)] = [
        {"filename": "python/sglang/multimodal_gen/runtime/models/dits/wanvideo.py"}
    ]
    assert push(hook, fake, action="labeled", label="diffusion").outcome == ("ignored: not the perf label")
    answer = push(hook, fake, action="labeled", label="run-perf")
    [comparison] = comparisons(session)
    assert answer.outcome == f"comparison {comparison.id} created on label"
    assert {result.case.slug for result in comparison.results} == {"wan2.2-t2v-a14b", "wan2.1-t2v-1.3b"}
    assert comparison.requested_by == "maintainer-m"
    fake.add_pull(REPO, PR, head_sha="5" * 40, merge_base=MERGE_BASE)
    payload = pushed(head="5" * 40)
    payload["pull_request"]["labels"].append(github_shapes.label(REPO, "run-perf"))
    answer = hook.send("pull_request", payload)
    assert answer.outcome.endswith("created on label, 1 superseded")
    assert comparisons(session)[-1].head_sha == "5" * 40
    # Adding the label again on a head already measured does nothing.
    payload["action"] = "labeled"
    payload["label"] = github_shapes.label(REPO, "run-perf")
    again = hook.send("pull_request", payload)
    assert again.outcome == "ignored: this head was measured already"


def test_a_github_outage_while_reading_keeps_the_command_and_carries_it_out_later(
    hook: Hook, session: Session, settings: Settings, github: GithubClient, fake: FakeGithub
) -> None:
    fake.fail_next(100)
    answer = hook.comment("/perf qwen-image-t2i-1024", delivery="outage-1")
    assert answer.status_code == 202  # accepted at once: GitHub does not redeliver on its own
    assert answer.state is DeliveryState.PENDING
    assert answer.outcome.startswith("retrying in 15 s")
    assert comparisons(session) == []
    row = session.scalar(select(GithubDelivery).where(GithubDelivery.delivery_id == "outage-1"))
    assert row is not None
    assert "502" in (row.last_error or "")
    assert "ghp_test_token" not in (row.last_error or "")
    # A redelivery while it waits changes nothing; once GitHub answers, the scheduler carries it out.
    assert hook.comment("/perf qwen-image-t2i-1024", delivery="outage-1").answer == {
        "outcome": "already queued"
    }
    fake.fail_next(0)
    assert carry_out(session, settings, github) == []  # not due yet: backoff
    [outcome] = carry_out(session, settings, github, later_s=20)
    assert outcome.startswith("comparison ")
    assert len(comparisons(session)) == 1
    flush(session, settings, github, later_s=20)
    assert [reaction["content"] for reaction in fake.reactions] == ["eyes"]


def test_payload_files_are_github_shaped() -> None:
    payload = json.loads((DATA / "issue_comment_created_pr.json").read_text())
    assert payload["action"] == "created"
    assert "pull_request" in payload["issue"]
    assert copy.deepcopy(payload)["installation"]["id"] == 7001
