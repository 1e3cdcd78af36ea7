"""A tracker, an upstream git repository and a suite for agent tests, all real and all local."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.live import live_server
from tracker import db
from tracker.access.tokens import create_token
from tracker.enums import TokenRole
from tracker.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
FAKE_SGLANG = f"{sys.executable} {ROOT / 'tests' / 'fakes' / 'fake_sglang.py'}"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_AUTHOR_DATE": "2026-05-01T10:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-05-01T10:00:00+00:00",
    "PATH": "/usr/bin:/bin",
}

SUITE = """
[suite]
name = "agent-test"

[repository]
name = "upstream"
url = "{url}"

[hardware.cpu]
description = "test host"

[[cases]]
slug = "fake-t2i"
model = "Qwen/Qwen-Image-2512"
family = "qwen-image"
task = "t2i"
hardware = ["cpu"]
timeout_s = 10

[cases.params]
prompt = "a fox"
width = 1024
height = 1024
num-inference-steps = 50
seed = 42

[cases.flags]
enable-torch-compile = true
warmup = true

# Incident 2's flag: sglang 0.5.10 has no --offload-during-compile yet.
[[cases]]
slug = "fake-t2i-offload"
model = "Qwen/Qwen-Image-2512"
family = "qwen-image"
task = "t2i"
hardware = ["cpu"]
timeout_s = 10

[cases.params]
prompt = "a fox"
width = 1024
height = 1024
num-inference-steps = 50
seed = 42

[cases.flags]
enable-torch-compile = true
warmup = true
offload-during-compile = true
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout.strip()


@dataclass(frozen=True)
class Upstream:
    """An upstream repository: main with three commits, a PR that applies and one that conflicts."""

    path: Path
    main: list[str]
    good_pr: str  # refs/pull/7/head
    bad_pr: str  # refs/pull/8/head


def make_upstream(root: Path) -> Upstream:
    path = root / "upstream"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    shas = []
    for index in range(3):
        (path / "model.py").write_text(f"VERSION = {index}\n")
        git(path, "add", "model.py")
        git(path, "commit", "-q", "-m", f"Change {index}")
        shas.append(git(path, "rev-parse", "HEAD"))
    git(path, "checkout", "-q", "-b", "fix", shas[1])
    (path / "fix.py").write_text("FIXED = True\n")
    git(path, "add", "fix.py")
    git(path, "commit", "-q", "-m", "Add the fix")
    git(path, "update-ref", "refs/pull/7/head", "HEAD")
    git(path, "checkout", "-q", "-b", "clash", shas[0])
    (path / "model.py").write_text("VERSION = 'clash'\n")
    git(path, "commit", "-q", "-am", "Clash with main")
    git(path, "update-ref", "refs/pull/8/head", "HEAD")
    git(path, "checkout", "-q", "main")
    return Upstream(path=path, main=shas, good_pr="refs/pull/7/head", bad_pr="refs/pull/8/head")


@dataclass(frozen=True)
class Tracker:
    url: str
    settings: Settings
    runner_token: str
    admin_token: str
    runner_tokens: dict[str, str] = field(default_factory=dict)

    def token_for(self, runner: str) -> str:
        """A runner token of its own for the runner named ``runner`` (a token acts as one runner)."""
        if runner not in self.runner_tokens:
            engine = db.make_engine(self.settings.effective_database_url)
            try:
                with db.session_scope(db.make_session_factory(engine)) as session:
                    issued = create_token(session=session, name=f"runner-{runner}", role=TokenRole.RUNNER)
                    self.runner_tokens[runner] = issued.secret
            finally:
                engine.dispose()
        return self.runner_tokens[runner]

    def enqueue(
        self, sha: str, patches: list[str] | None = None, purpose: str = "", case: str = "fake-t2i"
    ) -> int:
        response = httpx.post(
            f"{self.url}/api/v1/jobs",
            json={
                "case": case,
                "hardware": "cpu",
                "commit": {"sha": sha},
                "patches": patches or [],
                "purpose": purpose,
            },
            headers={"Authorization": f"Bearer {self.admin_token}"},
        )
        assert response.status_code == 201, response.text
        job_id: int = response.json()["job"]["id"]
        return job_id

    def job(self, job_id: int) -> dict[str, object]:
        data: dict[str, object] = httpx.get(f"{self.url}/api/v1/jobs/{job_id}").json()
        return data

    def runs_of(self, job_id: int) -> list[dict[str, object]]:
        engine = db.make_engine(self.settings.effective_database_url)
        try:
            with engine.connect() as connection:
                from sqlalchemy import text

                rows = connection.execute(
                    text("SELECT id, status, attempt FROM runs WHERE job_id = :job ORDER BY id"),
                    {"job": job_id},
                ).mappings()
                return [dict(row) for row in rows]
        finally:
            engine.dispose()


@contextmanager
def tracker(db_url: str, root: Path, upstream: Upstream, lease_seconds: int = 60) -> Iterator[Tracker]:
    suites = root / "suites"
    suites.mkdir()
    (suites / "agent.toml").write_text(SUITE.format(url=upstream.path))
    settings = Settings(
        database_url=db_url,
        data_dir=root,
        suite_dir=suites,
        lease_seconds=lease_seconds,
        environment="test",
        # The other test worker shares these cores by design: a CPU run beside it is not contended
        # here (measurement hygiene has tests of its own: tests/tracker/workflows/test_reruns.py).
        flag_cpu_contention=False,
    )
    with live_server(settings) as url:
        engine = db.make_engine(settings.effective_database_url)
        with db.session_scope(db.make_session_factory(engine)) as session:
            runner = create_token(session=session, name="runner", role=TokenRole.RUNNER).secret
            admin = create_token(session=session, name="admin", role=TokenRole.ADMIN).secret
        engine.dispose()
        yield Tracker(url=url, settings=settings, runner_token=runner, admin_token=admin)
