"""The /perf bot end to end: a signed PR comment on the fake GitHub makes the live tracker compare
the toy repository's PR #102 (stacked on #101) with its merge base, a real CPU runner measures the
interleaved rounds, and the one bot comment goes from queued to a finished table while the commit
status follows the verdict. A push to the PR during the rounds is not built: the runner measures the
head the command saw. An unsigned copy of the webhook is refused and changes nothing, and a slow
GitHub never holds up the webhook's answer."""

from __future__ import annotations

import copy
import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from runners.agent import Agent, AgentConfig
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.toy import ToyRepository, create_toy_repository
from runners.workloads.registry import default_workloads
from tests.fakes.fake_github import FakeGithub
from tests.leases import UNEXPIRING_LEASE_S
from tests.live import live_server, serve_asgi
from tests.waiting import wait_until
from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import RunStatus, TokenRole
from tracker.github.client import client_from_settings
from tracker.github.outbox import flush_outbox
from tracker.github.webhook import sign
from tracker.models import Comparison, Run, RunArtifacts
from tracker.settings import Settings

pytestmark = pytest.mark.slow  # a live tracker, fake GitHub and a real CPU runner measuring the toy pipeline

ROOT = Path(__file__).resolve().parent.parent.parent
TOY_SUITE = ROOT / "runners" / "toy" / "toy-suite.toml"
PAYLOAD = ROOT / "tests" / "data" / "github" / "issue_comment_created_pr.json"
SECRET = "whsec-e2e-0123456789abcdef"
REPO = "toydit/toydit"
CASE = "toy-dit-t2i-256-offload-compile"


@dataclass
class Stack:
    url: str
    fake: FakeGithub
    settings: Settings
    runner_token: str
    toy: ToyRepository


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("github-e2e")
    toy = create_toy_repository(root / "toy-repo")
    suites = root / "suites"
    suites.mkdir()
    # A quarter of the steps: what is tested is the path from comment to report, not the timing.
    suite = TOY_SUITE.read_text().replace("{toy_repo}", str(toy.path))
    (suites / "toy.toml").write_text(suite.replace("num-inference-steps = 400", "num-inference-steps = 100"))
    fake = FakeGithub()
    pr102 = next(pr for pr in toy.pull_requests if pr.number == 102)
    pr101 = next(pr for pr in toy.pull_requests if pr.number == 101)
    fake.add_pull(REPO, 102, head_sha=pr102.head_sha, merge_base=pr102.base_sha)
    fake.add_pull(REPO, 101, head_sha=pr101.head_sha, merge_base=pr101.base_sha)
    with serve_asgi(fake.app()) as github_url:
        settings = Settings(
            database_url=f"sqlite:///{root / 'tracker.db'}",
            data_dir=root,
            suite_dir=suites,
            environment="development",
            lease_seconds=UNEXPIRING_LEASE_S,
            github_api_url=github_url,
            github_token=SecretStr("ghp_e2e_token_not_real_0000"),
            github_webhook_secret=SecretStr(SECRET),
            github_allowed_users=["mira"],
            github_max_rounds=4,  # the path is tested, not the verdict: room for rounds a busy host spoils
            # The other test worker shares these cores by design: the /perf path is tested, not the
            # measurement hygiene (tests/tracker/workflows/test_reruns.py).
            flag_cpu_contention=False,
            public_url="http://perftrack.test",
        )
        with live_server(settings) as url:
            engine = db.make_engine(settings.effective_database_url)
            with db.session_scope(db.make_session_factory(engine)) as session:
                token = create_token(session=session, name="e2e-runner", role=TokenRole.RUNNER).secret
            engine.dispose()
            yield Stack(url=url, fake=fake, settings=settings, runner_token=token, toy=toy)


def _webhook(body: str, delivery: str) -> dict[str, Any]:
    payload = json.loads(PAYLOAD.read_text())
    event = copy.deepcopy(payload)
    event.pop("installation", None)  # a personal token here, not an App
    event["repository"]["full_name"] = REPO
    event["repository"]["name"] = "toydit"
    event["repository"]["owner"]["login"] = "toydit"
    event["issue"]["number"] = 102
    event["comment"]["body"] = body
    event["comment"]["user"]["login"] = "mira"
    event["sender"]["login"] = "mira"
    return {"delivery": delivery, "content": json.dumps(event).encode()}


def _post(stack: Stack, hook: dict[str, Any], signed: bool = True) -> httpx.Response:
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": hook["delivery"],
        "Content-Type": "application/json",
    }
    if signed:
        headers["X-Hub-Signature-256"] = sign(SECRET, hook["content"])
    return httpx.post(
        stack.url + "/api/v1/github/webhook", content=hook["content"], headers=headers, timeout=60
    )


def _wait_for_comments(stack: Stack) -> list[dict[str, Any]]:
    wait_until(lambda: stack.fake.comments_on(102), 60, "the bot's comment on #102")
    return [dict(comment) for comment in stack.fake.comments_on(102)]


def _wait_for_comparisons(stack: Stack, count: int, timeout_s: float = 60) -> int:
    """Comparisons once there are ``count`` (the bot carries a delivery out after the answer)."""
    wait_until(lambda: _comparisons(stack) >= count, timeout_s, f"{count} comparison(s)")
    return _comparisons(stack)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _push_to_pull_request(toy: ToyRepository, number: int) -> str:
    """A commit added on top of ``refs/pull/N/head`` (the PR moves on); returns its sha."""
    head = toy.pull_request(number).head_sha
    tree = _git(toy.path, "rev-parse", f"{head}^{{tree}}")
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=toy.path,
        input="pushed during the rounds\n",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    index = toy.path / ".git" / "pushed-index"
    env_index = {"GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", tree], cwd=toy.path, check=True, env={**_env(), **env_index})
    subprocess.run(
        ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},PUSHED.txt"],
        cwd=toy.path,
        check=True,
        env={**_env(), **env_index},
    )
    new_tree = subprocess.run(
        ["git", "write-tree"],
        cwd=toy.path,
        check=True,
        capture_output=True,
        text=True,
        env={**_env(), **env_index},
    ).stdout.strip()
    pushed = _git(toy.path, "commit-tree", new_tree, "-p", head, "-m", "Pushed during the rounds")
    _git(toy.path, "update-ref", f"refs/pull/{number}/head", pushed)
    return pushed


def _env() -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "GIT_AUTHOR_NAME": "pusher",
        "GIT_AUTHOR_EMAIL": "pusher@example.org",
        "GIT_COMMITTER_NAME": "pusher",
        "GIT_COMMITTER_EMAIL": "pusher@example.org",
    }


def _comparisons(stack: Stack) -> int:
    engine = db.make_engine(stack.settings.effective_database_url)
    with db.make_session_factory(engine)() as session:
        count = session.scalar(select(func.count()).select_from(Comparison)) or 0
    engine.dispose()
    return count


def test_an_unsigned_webhook_is_refused_and_changes_nothing(stack: Stack) -> None:
    hook = _webhook(f"/perf {CASE} on cpu rounds 2 with #101", "e2e-unsigned")
    response = _post(stack, hook, signed=False)
    assert response.status_code == 401
    assert _comparisons(stack) == 0
    assert stack.fake.comments_on(102) == []


def test_perf_comment_is_measured_by_a_cpu_runner_and_reported_in_one_comment(
    stack: Stack, tmp_path: Path
) -> None:
    hook = _webhook(f"/perf {CASE} on cpu rounds 2 with #101", "e2e-perf-1")
    response = _post(stack, hook)
    assert response.status_code == 202, response.text
    assert _wait_for_comparisons(stack, 1) == 1
    [queued] = _wait_for_comments(stack)  # posted from the outbox right after the answer
    assert "<!-- perftrack:comparison:" in queued["body"]
    first_body = queued["body"]
    # The author pushes while the rounds wait for a runner: what the maintainer asked for is built.
    asked_for = stack.toy.pull_request(102).head_sha
    _push_to_pull_request(stack.toy, 102)

    client = TrackerClient(stack.url, stack.runner_token, retries=5, backoff_s=0.5)
    agent = Agent(
        AgentConfig(name="e2e-cpu", hardware="cpu", gpus=1, workdir=tmp_path / "runner", poll_interval_s=0.2),
        client,
        CandidateBuilder(tmp_path / "runner"),
        default_workloads(cache_dir=tmp_path / "runner" / "cache"),
    )
    try:
        agent.run(once=True)
    finally:
        client.close()
    engine = db.make_engine(stack.settings.effective_database_url)
    sessions = db.make_session_factory(engine)
    with sessions() as session:
        github = client_from_settings(stack.settings)
        assert github is not None
        flush_outbox(session=session, settings=stack.settings, client=github)
        comparison = session.scalars(select(Comparison)).one()
        verdicts = [result.verdict.value for result in comparison.results]
        state = comparison.state.value
        head_builds = session.scalars(
            select(RunArtifacts)
            .join(Run, Run.id == RunArtifacts.run_id)
            .where(Run.candidate_id == comparison.head_candidate_id, Run.status == RunStatus.OK)
        ).all()
        built = {(tuple(artifacts.patches_applied), artifacts.tree_sha) for artifacts in head_builds}
    engine.dispose()

    pinned = f"refs/pull/102/head@{asked_for}"
    assert built, "the head arm measured nothing"
    [mirror] = (tmp_path / "runner" / "mirrors").glob("*.git")
    for patches, tree in built:
        assert patches[-1] == pinned
        assert tree is not None
        assert "PUSHED.txt" not in _git(mirror, "ls-tree", "--name-only", tree).split()

    [final] = stack.fake.comments_on(102)  # still one comment: edited in place
    assert final["id"] == queued["id"]
    assert final["body"] != first_body
    assert state == "done"
    assert CASE in final["body"]
    assert any(verdict in final["body"] for verdict in verdicts)
    assert "#101" in final["body"]
    statuses = [call.body for call in stack.fake.calls_to("POST", "/statuses/")]
    assert statuses[0]["state"] == "pending"
    expected = "failure" if "regression" in verdicts else "success"
    assert statuses[-1]["state"] == expected


def test_a_slow_github_never_holds_up_the_webhook_answer(stack: Stack) -> None:
    before = _comparisons(stack)
    # Every GitHub call hangs until the webhook has been answered: an answer that waited on GitHub
    # would not come before the post times out (GitHub gives a webhook 10 s), however fast the machine.
    github_answers = threading.Event()
    stack.fake.hold = github_answers
    try:
        response = _post(stack, _webhook(f"/perf {CASE} on cpu rounds 2", "e2e-slow-github"))
        assert response.status_code == 202, response.text
        github_answers.set()
        # The bot still carries the command out, after the answer (permission, pull, compare).
        assert _wait_for_comparisons(stack, before + 1, timeout_s=90) == before + 1
    finally:
        stack.fake.hold = None
        github_answers.set()
