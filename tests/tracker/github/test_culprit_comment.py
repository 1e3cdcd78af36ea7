"""The culprit's pull request is told: a confirmed group whose culprit came from a pull request gets
one comment there (docs/github-bot.md, "The culprit's pull request"), edited as the group grows,
against the fake GitHub."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.fakes.fake_github import FakeGithub
from tests.tracker.bench import Bench
from tests.tracker.detection.test_bisection import CULPRIT, git
from tests.tracker.evidence_runs import drain
from tests.tracker.views.alert_rows import T0, commit, stored_alert
from tracker.detection.grouping import place
from tracker.enums import Direction, OutboxKind
from tracker.github.client import GithubClient
from tracker.github.culprits import tell_culprit
from tracker.github.outbox import flush_outbox
from tracker.models import Alert, AlertGroup, Commit, GithubOutbox, Job, utcnow
from tracker.settings import Settings
from tracker.vcs.history import GitHistory
from wire import CommitIn

NOW = T0 + dt.timedelta(days=2)
REPO = "sgl-project/sglang"
PR = 4321
WAN = "wan2.2-t2v-a14b"
GB300_CASE = "qwen-image-2.1-serve-gb300"
PAIRED = {"paired_change_pct": 3.4, "paired_ci_pct": [2.9, 3.9]}


def bisected(session: Session, title: str = f"Fuse the norm kernels (#{PR})", **fields: Any) -> Alert:
    """A confirmed alert between commits 4 and 5 whose bisection named commit 5 (titled ``title``),
    placed in its group as bisection places it."""
    case = fields.get("case", "qwen-image-t2i-1024")
    culprit = commit(session, 5, case=case)
    culprit.title = title
    fields.setdefault("evidence", dict(PAIRED))
    alert = stored_alert(session, 5, culprit_commit=culprit, **fields)
    place(session=session, alert=alert, now=NOW)
    session.flush()
    return alert


def sending(settings: Settings) -> Settings:
    """The settings of a server that can write to GitHub (a token)."""
    return settings.model_copy(update={"github_token": SecretStr("ghp_x")})


def told(session: Session, alert: Alert, settings: Settings, fake: FakeGithub) -> None:
    """What the reaction to a confirmed alert or a named culprit does, then the outbox's flush."""
    telling = sending(settings).culprit_telling()
    tell_culprit(session=session, group=alert.group, telling=telling, now=NOW)
    flush_outbox(
        session=session, settings=settings, client=GithubClient(token="ghp_x", transport=fake.transport())
    )


def group_of(alert: Alert) -> AlertGroup:
    assert alert.group is not None
    return alert.group


def test_a_confirmed_bisected_group_from_a_pull_request_gets_one_comment_with_the_facts(
    session: Session, settings: Settings
) -> None:
    fake = FakeGithub()
    alert = bisected(session)
    told(session, alert, settings.model_copy(update={"public_url": "https://perf.example"}), fake)

    [comment] = fake.comments_on(PR)
    group = group_of(alert)
    body = comment["body"]
    assert "`qwen-image-t2i-1024`" in body
    assert "H200" in body
    assert "+3.4 %" in body
    assert "[+2.9, +3.9] %" in body
    assert f"https://perf.example/groups/{group.id}" in body
    assert "`/perf`" in body
    assert f"<!-- perftrack:group:{group.id} -->" in body
    assert group.github_comment_id == comment["id"]


def test_a_group_confirmed_twice_tells_once(session: Session, settings: Settings) -> None:
    fake = FakeGithub()
    alert = bisected(session)
    told(session, alert, settings, fake)
    place(session=session, alert=alert, now=NOW)  # re-evaluated: nothing changed
    told(session, alert, settings, fake)

    assert len(fake.comments_on(PR)) == 1
    assert fake.calls_to("PATCH", "/issues/comments/") == []


def test_a_comment_whose_answer_was_lost_is_found_by_its_marker_not_posted_again(
    session: Session, settings: Settings
) -> None:
    fake = FakeGithub()
    fake.fail_next(1, methods=("POST",), status=502, carried_out=True)
    alert = bisected(session)
    told(session, alert, settings, fake)  # GitHub created it, the answer was lost
    later = utcnow() + dt.timedelta(hours=1)  # past the backoff
    client = GithubClient(token="ghp_x", transport=fake.transport())
    assert flush_outbox(session=session, settings=settings, client=client, now=later).sent == 1

    [comment] = fake.comments_on(PR)
    assert group_of(alert).github_comment_id == comment["id"]


def test_a_growing_group_edits_the_same_comment(session: Session, settings: Settings) -> None:
    fake = FakeGithub()
    first = bisected(session)
    told(session, first, settings, fake)
    joined = bisected(session, case=GB300_CASE, hardware="GB300")
    assert joined.group is first.group
    told(session, joined, settings, fake)

    [comment] = fake.comments_on(PR)
    assert comment["edits"] == 1
    assert "`qwen-image-t2i-1024`" in comment["body"]
    assert "GB300" in comment["body"]


def test_an_improvement_is_told_in_one_line(session: Session, settings: Settings) -> None:
    fake = FakeGithub()
    faster = {"paired_change_pct": -8.0, "paired_ci_pct": [-9.0, -7.0]}
    alert = bisected(
        session, direction=Direction.IMPROVEMENT, change_pct=-8.0, after_value=92.0, evidence=faster
    )
    told(session, alert, settings, fake)

    [comment] = fake.comments_on(PR)
    text, marker = comment["body"].split("\n\n")
    assert "\n" not in text
    assert "improved `qwen-image-t2i-1024` on H200 -8.0 % [-9.0, -7.0]" in text
    assert marker.startswith("<!-- perftrack:group:")


def test_the_repository_s_switch_turns_it_off(session: Session, settings: Settings) -> None:
    fake = FakeGithub()
    off = settings.model_copy(update={"github_tell_culprits_repositories": {REPO.upper(): False}})
    alert = bisected(session)
    told(session, alert, off, fake)

    assert fake.comments_on(PR) == []
    assert group_of(alert).github_comment_id is None


def test_a_culprit_without_a_pull_request_number_comments_nowhere(
    session: Session, settings: Settings
) -> None:
    fake = FakeGithub()
    alert = bisected(session, title="Fuse the norm kernels")
    told(session, alert, settings, fake)

    assert fake.comments == {}
    assert fake.calls == []


@pytest.fixture
def pr_history(tmp_path: Path) -> tuple[Path, list[CommitIn]]:
    """The toy history of ``test_bisection`` (commit 47 the culprit), squash-merged from PR #4321."""
    repo = tmp_path / "sglang"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    commits = []
    for index in range(60):
        when = (dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC) + dt.timedelta(hours=6 * index)).isoformat()
        title = f"Fuse RMSNorm under torch._dynamo.disable (#{PR})" if index == CULPRIT else f"Change {index}"
        git(repo, "commit", "--quiet", "--allow-empty", "-m", title, when=when)
        sha, *parents = git(repo, "log", "-1", "--format=%H %P").split()
        commits.append(CommitIn(sha=sha, parents=parents, title=title, committed_at=when))
    return repo, commits


def test_nightly_detection_and_bisection_tell_the_culprit_s_pull_request_with_its_diagnosis(
    session: Session,
    settings: Settings,
    pr_history: tuple[Path, list[CommitIn]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, commits = pr_history
    # The repository is on GitHub; git fetches it from the local copy instead.
    github_url = f"https://github.com/{REPO}"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{path}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", github_url)
    telling = sending(settings).culprit_telling()
    bench = Bench(session, history=GitHistory(tmp_path / "mirrors"), telling=telling)
    assert bench.case.repository is not None
    bench.case.repository.url = github_url
    shas = [commit.sha for commit in commits]
    rng = random.Random(1)

    def measure(commit: Commit, job: Job) -> float:
        return (287.6 if shas.index(commit.sha) >= CULPRIT else 263.7) * (1 + rng.gauss(0, 0.003))

    for index in range(0, 55, 5):
        bench.nightly(commits[index])
        drain(bench, measure)
    rows = session.scalars(select(GithubOutbox).where(GithubOutbox.kind == OutboxKind.CULPRIT)).all()
    # Queued when the culprit was named, then as each of its two evidence runs was read (never at
    # a later bisection step or nightly evaluation that changed nothing).
    told = [(row.target, row.payload["evidence_read"]) for row in rows]
    assert told == [(str(PR), 0), (str(PR), 1), (str(PR), 2)]
    fake = FakeGithub()
    client = GithubClient(token="ghp_x", transport=fake.transport())
    report = flush_outbox(session=session, settings=settings, client=client)

    assert (report.sent, report.superseded) == (1, 2)  # the newest row tells the group as it is now
    [comment] = fake.comments_on(PR)
    assert "new graph break at toydit/norm.py:19" in comment["body"]


def test_a_server_that_cannot_send_queues_nothing(session: Session, settings: Settings) -> None:
    alert = bisected(session)
    no_credentials = settings.culprit_telling()
    off = {"github_tell_culprits_repositories": {REPO: False}}
    turned_off = sending(settings).model_copy(update=off).culprit_telling()

    for telling in (None, no_credentials, turned_off):
        assert tell_culprit(session=session, group=alert.group, telling=telling, now=NOW) is None
    assert session.scalars(select(GithubOutbox)).all() == []


def test_a_group_first_confirmed_too_long_ago_is_not_told(session: Session, settings: Settings) -> None:
    alert = bisected(session)
    telling = sending(settings).culprit_telling()
    assert telling.max_age == dt.timedelta(days=7)  # the default

    alert.confirmed_at = NOW - dt.timedelta(days=7, minutes=1)
    assert tell_culprit(session=session, group=alert.group, telling=telling, now=NOW) is None
    alert.confirmed_at = NOW - dt.timedelta(days=6)
    assert tell_culprit(session=session, group=alert.group, telling=telling, now=NOW) is not None


def test_a_comment_unsent_for_longer_than_the_limit_is_dropped_with_a_log_line(
    session: Session, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    alert = bisected(session)
    telling = sending(settings).culprit_telling()
    row = tell_culprit(session=session, group=alert.group, telling=telling, now=NOW)
    assert row is not None
    fake = FakeGithub()
    client = GithubClient(token="ghp_x", transport=fake.transport())
    late = row.created_at + dt.timedelta(days=7, minutes=1)  # GitHub unreachable, or configured late

    report = flush_outbox(session=session, settings=settings, client=client, now=late)

    assert (report.sent, report.superseded) == (0, 1)
    assert fake.calls == []
    assert row.done_at is not None
    assert row.done_at >= late
    assert row.last_error is not None
    assert "unsent for longer than 7 days" in row.last_error
    assert f"culprit comment on {REPO}#{PR} dropped" in caplog.text
