"""A bisection across the release that renamed ``--warmup``: each commit is run with its own flags.

The fake repository's history holds two sglang releases: its commits up to ``RELEASE`` ship a
command line of sglang 0.5.10's (``--warmup``), later ones 0.5.23's (``--warmup-mode``; ``--warmup``
is then ambiguous and exits 2). Every commit's tree carries a small ``sglang`` shim that runs the
strict fake sglang in its era, with the commit's speed. The tracker's nightly runs skip commits, a
regression lands after the release, and the bisection measures commits on both sides of it: the
runner's workload asks each built commit for its options, so both spellings appear in one series
and the culprit is found. A case that needs an option only the new release has is a setup failure
on the old commits, which the bisection skips instead of calling good or bad.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from runners.candidates import CandidateBuilder
from runners.jobspec import CandidateSpec, CaseSpec, RepositorySpec
from runners.parsing import RunStatus, parse_run
from runners.workloads.base import WorkloadContext
from runners.workloads.cli.discovery import OptionsCache
from runners.workloads.sglang import SglangWorkload
from tests.tracker.bench import Bench
from tracker.enums import JobReason
from tracker.models import Alert, Commit, Job
from tracker.vcs.history import GitHistory
from wire import CommitIn

ROOT = Path(__file__).resolve().parents[2]
FAKE_SGLANG = ROOT / "tests" / "fakes" / "fake_sglang.py"
RELEASE = 32  # the first commit of the new release (0.5.23's command line)
CULPRIT = 31  # 9 % slower from here on: the last commit of the old release
COMMITS = 40
SHIM = """import os, sys
from pathlib import Path
here = Path(__file__).resolve().parent
os.environ["FAKE_SGLANG_ERA"] = (here / "RELEASE").read_text().strip()
os.environ["FAKE_SGLANG_STEP_SCALE"] = (here / "SPEED").read_text().strip()
os.execv(sys.executable, [sys.executable, {fake!r}, *sys.argv[1:]])
"""


def git(repo: Path, *args: str, when: str | None = None) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Priya Raman",
        "GIT_AUTHOR_EMAIL": "priya@example.invalid",
        "GIT_COMMITTER_NAME": "Priya Raman",
        "GIT_COMMITTER_EMAIL": "priya@example.invalid",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    if when:
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[CommitIn]]:
    """40 commits: the regression at 31, the release at 32."""
    repo = tmp_path / "sglang"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "sglang_shim.py").write_text(SHIM.format(fake=str(FAKE_SGLANG)), encoding="utf-8")
    commits = []
    for index in range(COMMITS):
        when = (dt.datetime(2026, 7, 1, 9, tzinfo=dt.UTC) + dt.timedelta(hours=6 * index)).isoformat()
        (repo / "RELEASE").write_text("current\n" if index >= RELEASE else "legacy\n")
        (repo / "SPEED").write_text("1.091\n" if index >= CULPRIT else "1.0\n")
        (repo / "change.txt").write_text(f"{index}\n")
        title = {
            RELEASE: "Release 0.5.18: --warmup gives way to --warmup-mode",
            CULPRIT: "Wrap the norm",
        }.get(index, f"Change {index}")
        git(repo, "add", "-A")
        git(repo, "commit", "--quiet", "-m", title, when=when)
        sha = git(repo, "rev-parse", "HEAD").strip()
        parents = git(repo, "log", "-1", "--format=%P").split()
        commits.append(
            CommitIn(sha=sha, parents=parents, title=title, author_name="Priya Raman", committed_at=when)
        )
    return repo, commits


@dataclass
class Runner:
    """The runner side of each job: the candidate built with real git, the workload run on it."""

    repo: Path
    work: Path
    index_of: dict[str, int]
    options: OptionsCache = field(default_factory=OptionsCache)
    argv: dict[int, list[list[str]]] = field(default_factory=dict)  # commit index -> each run's argv
    failures: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.builder = CandidateBuilder(self.work / "agent", base_env={"PATH": "/usr/bin:/bin"})

    def measure(self, commit: Commit, job: Job) -> float | str:
        """Build the job's candidate, run its case there; the parsed value, or the failure's reason."""
        index = self.index_of[commit.sha]
        case = CaseSpec(
            slug=job.case.slug,
            version=job.case.version,
            model=job.case.model,
            task=job.case.task,
            workload="sglang",
            mode="generate",
            num_gpus=1,
            requests=1,
            timeout_s=60,
            params=dict(job.case.params),
            flags=dict(job.case.flags),
        )
        repository = RepositorySpec(name="sglang", url=str(self.repo))
        echo = self.work / f"echo-{job.id}.json"
        with self.builder.build(repository, CandidateSpec(base_sha=commit.sha)) as built:
            workload = SglangWorkload(
                generate_executable=(sys.executable, str(built.path / "sglang_shim.py"), "generate"),
                base_env={"PATH": "/usr/bin:/bin", "FAKE_SGLANG_ECHO": str(echo)},
                probe=None,
                cpu_sampler=None,
                options_cache=self.options,
            )
            context = WorkloadContext(
                tree=built.path, job_dir=self.work / "jobs" / str(job.id), candidate_sha=built.head_sha
            )
            result = workload.run(case, context)
        if result.failure is not None:
            self.failures[index] = result.failure
            return result.failure
        self.argv.setdefault(index, []).append(json.loads(echo.read_text(encoding="utf-8"))["argv"])
        parsed = parse_run(result.log_text, result.perf_dump_text)
        assert parsed.status is RunStatus.OK, parsed.failure_reason
        assert parsed.denoise_step_ms is not None
        return parsed.denoise_step_ms


def nightlies(
    session: Session,
    history: tuple[Path, list[CommitIn]],
    tmp_path: Path,
    *,
    flags: dict[str, object] | None = None,
) -> tuple[Bench, Runner]:
    """Nightly runs of every fifth commit, each drained with what follows it (bisection included)."""
    repo, commits = history
    bench = Bench(session, history=GitHistory(tmp_path / "mirrors"), steps=_noisy(random.Random(3)))
    assert bench.case.repository is not None
    bench.case.repository.url = str(repo)
    if flags is not None:
        bench.case.flags = {**bench.case.flags, **flags}
    runner = Runner(repo, tmp_path / "runner", {commit.sha: index for index, commit in enumerate(commits)})
    for index in range(0, COMMITS, 5):  # nightly runs skipped four commits out of five
        bench.nightly(commits[index])
        bench.drain(runner.measure)
    return bench, runner


def _noisy(rng: random.Random) -> Callable[[float], list[float]]:
    """Run-to-run noise around the measured value: the fake itself prints the same numbers every time."""

    def steps(value: float) -> list[float]:
        return [value * (1 + rng.gauss(0, 0.003))] * 5

    return steps


def test_a_bisection_across_the_release_runs_each_commit_with_its_own_flags(
    session: Session, history: tuple[Path, list[CommitIn]], tmp_path: Path
) -> None:
    bench, runner = nightlies(session, history, tmp_path)
    [alert] = session.scalars(select(Alert)).all()
    commits = history[1]
    assert alert.bisection_state == "found"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[CULPRIT].sha
    bisected = {runner.index_of[step.commit.sha] for step in alert.bisection_steps}
    assert any(index < RELEASE for index in bisected), bisected  # the search crossed the release
    assert any(index >= RELEASE for index in bisected), bisected
    assert runner.failures == {}
    for index, runs in runner.argv.items():
        for argv in runs:
            if index < RELEASE:
                assert "--warmup" in argv, (index, argv)
                assert "--warmup-mode" not in argv, (index, argv)
            else:
                assert argv[argv.index("--warmup-mode") + 1] == "request", (index, argv)
                assert "--warmup" not in argv, (index, argv)
    assert any(job.reason is JobReason.BISECT for job in bench.ran)


def test_an_option_only_the_new_release_has_is_a_setup_failure_on_older_commits(
    session: Session, history: tuple[Path, list[CommitIn]], tmp_path: Path
) -> None:
    # --warmup-steps exists in both releases; --warmup-num-frames only in 0.5.23's.
    bench, runner = nightlies(session, history, tmp_path, flags={"warmup-num-frames": 1})
    commits = history[1]
    assert sorted(runner.failures) == list(range(0, RELEASE, 5))
    for index, reason in runner.failures.items():
        assert reason.startswith("setup failed: ")
        assert "has no option --warmup-num-frames" in reason
        assert commits[index].sha[:12] in reason
    # The new release's commits ran with the option; the old ones never started a benchmark.
    assert sorted(runner.argv) == [35]
    assert runner.argv[35][0][runner.argv[35][0].index("--warmup-num-frames") + 1] == "1"
    stored = {job.candidate.base_commit.sha: job for job in bench.ran}
    for index in runner.failures:
        assert (stored[commits[index].sha].failure_reason or "").startswith("setup failed: ")
    assert session.scalars(select(Alert)).all() == []  # a setup failure is no measurement
