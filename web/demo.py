"""``perftrack demo``: the whole loop on a laptop CPU, with no GPU and no network.

It creates the toy repository (a small DiT pipeline whose history holds both real incidents),
starts the tracker on SQLite and a CPU runner, queues the history's commits nightly-style plus a
PR-style candidate (a base with the open fix branches stacked on it), shows progress, prints each
series commit by commit, and keeps serving the dashboard.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from runners.agent import Agent, AgentConfig, JobEvents
from runners.candidates import CandidateBuilder
from runners.client import TrackerClient
from runners.gitmeta import commit_info
from runners.jobspec import JobSpec
from runners.toy import ToyCommit, ToyRepository, create_toy_repository
from runners.workloads.registry import default_workloads
from tracker import db
from tracker.catalog import list_current_cases
from tracker.jobs import enqueue_job
from tracker.models import Candidate, Case, HardwareKind, Job, JobReason, JobState, Run, TokenRole
from tracker.queries import series
from tracker.schemas import CommitIn
from tracker.settings import Settings
from tracker.tokens import create_token
from tracker.vcs import ensure_candidate, upsert_commit
from web.app import create_app

TOY_SUITE = Path(__file__).resolve().parent.parent / "runners" / "toy" / "toy-suite.toml"
HARDWARE = "cpu"
# tqdm's "12/20 [" in the benchmark's output: how far the denoise loop is.
_STEP = re.compile(r"(\d+)/(\d+) \[")
RUNNER_NAME = "demo-cpu-runner"


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo keeps its repository, database, suite and runner workdir."""

    root: Path

    @property
    def repo(self) -> Path:
        return self.root / "toy-repo"

    @property
    def database(self) -> Path:
        return self.root / "perftrack-demo.db"

    @property
    def suites(self) -> Path:
        return self.root / "suites"

    @property
    def runner(self) -> Path:
        return self.root / "runner"


def run_demo(*, data_dir: Path, host: str, port: int, exit_after: bool, console: Console) -> int:
    """Run the demo; returns the process exit code."""
    started = time.monotonic()
    paths = DemoPaths(data_dir / "demo")
    _reset(paths)
    console.print(f"[bold]perftrack demo[/] in {paths.root}")
    toy = create_toy_repository(paths.repo, replace_outdated=True)
    console.print(
        f"toy repository: {len(toy.commits)} commits on main, {len(toy.pull_requests)} open pull requests"
    )
    paths.suites.mkdir(parents=True)
    (paths.suites / "toy.toml").write_text(TOY_SUITE.read_text().replace("{toy_repo}", str(paths.repo)))
    settings = Settings(
        database_url=f"sqlite:///{paths.database}",
        data_dir=paths.root,
        suite_dir=paths.suites,
        lease_seconds=120,
        environment="development",
    )
    with _serve(settings, host, port) as url:
        engine = db.make_engine(settings.effective_database_url)
        sessions = db.make_session_factory(engine)
        with db.session_scope(sessions) as session:
            token = create_token(session=session, name="demo-runner", role=TokenRole.RUNNER).secret
            queued = _enqueue(session, toy)
        console.print(f"tracker on [bold]{url}[/] · {queued} jobs queued · runner {RUNNER_NAME} starting")
        _run_runner(url, token, paths, sessions, console)
        with sessions() as session:
            _summary(session, toy, console)
        console.print(f"demo finished in {time.monotonic() - started:.0f} s")
        engine.dispose()
        if exit_after:
            return 0
        console.print(f"dashboard: [bold]{url}/[/] (Ctrl-C to stop)")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            console.print("stopped")
    return 0


def _reset(paths: DemoPaths) -> None:
    """Each demo starts from an empty database; the repository and compile cache are reused."""
    for leftover in (paths.database, paths.suites, paths.runner / "spool", paths.runner / "jobs"):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{leftover}{suffix}").unlink(missing_ok=True)
    paths.root.mkdir(parents=True, exist_ok=True)


@contextmanager
def _serve(settings: Settings, host: str, port: int) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True, name="tracker")
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(
                f"the tracker could not start on {host}:{port} (is the port in use? try --port)"
            )
        if time.monotonic() > deadline:
            raise RuntimeError("the tracker did not start within 60 s")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _enqueue(session: Session, toy: ToyRepository) -> int:
    """Every main commit, nightly-style, and the PR candidate: a base with the fix branches stacked."""
    cases = [case for case in list_current_cases(session=session) if case.workload.value == "toy"]
    kind = session.scalar(select(HardwareKind).where(HardwareKind.name == HARDWARE))
    repository = cases[0].repository if cases else None
    if kind is None or repository is None:
        raise RuntimeError(f"the toy suite {TOY_SUITE} defines no toy case on {HARDWARE!r}")
    count = 0
    for commit in toy.commits:
        info = commit_info(toy.path, commit.sha)
        stored = upsert_commit(
            session=session,
            repository=repository,
            commit=CommitIn(
                sha=commit.sha,
                committed_at=dt.datetime.fromisoformat(info.committed_at)
                if info and info.committed_at
                else None,
                title=commit.title,
                author_name=info.author_name if info else "",
                author_email=info.author_email if info else "",
                branch="main",
                parents=info.parents if info else [],
            ),
        )
        candidate = ensure_candidate(session=session, base=stored, patches=[])
        for case in cases:
            count += enqueue_job(
                session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.NIGHTLY
            ).created
    pr_base = upsert_commit(session=session, repository=repository, commit=CommitIn(sha=pr_base_sha(toy)))
    stacked = ensure_candidate(session=session, base=pr_base, patches=[pr.ref for pr in toy.pull_requests])
    for case in cases:
        count += enqueue_job(
            session=session, candidate=stacked, case=case, hardware=kind, reason=JobReason.PR, priority=-1
        ).created
    return count


def pr_base_sha(toy: ToyRepository) -> str:
    """The newest main commit on which every open fix is still missing: where stacking them matters."""
    shas = [commit.sha for commit in toy.commits]
    landed = min(shas.index(pr.landed_sha) for pr in toy.pull_requests)
    return shas[landed - 1]


def _run_runner(
    url: str, token: str, paths: DemoPaths, sessions: sessionmaker[Session], console: Console
) -> None:
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )

    def open_jobs() -> tuple[int, int]:
        with sessions() as session:
            states = session.scalars(select(Job.state)).all()
        finished = sum(state in (JobState.DONE, JobState.FAILED, JobState.CANCELLED) for state in states)
        return finished, len(states)

    overall = progress.add_task("jobs", total=open_jobs()[1])
    current = progress.add_task("", total=None, visible=False)

    def on_job(job: JobSpec) -> None:
        label = job.candidate.base_sha[:7] + "".join(f" + #{p.split('/')[2]}" for p in job.candidate.patches)
        progress.update(
            current, description=f"{job.case.slug} @ {label}", completed=0, total=None, visible=True
        )

    def on_output(line: str) -> None:
        found = _STEP.search(line)
        if found:
            progress.update(current, completed=int(found.group(1)), total=int(found.group(2)))

    def on_done(job: JobSpec, payload: dict[str, object]) -> None:
        finished, total = open_jobs()
        progress.update(overall, completed=finished + 1, total=total)

    client = TrackerClient(url, token, retries=5, backoff_s=0.5)
    agent = Agent(
        AgentConfig(name=RUNNER_NAME, hardware=HARDWARE, gpus=1, workdir=paths.runner, poll_interval_s=0.5),
        client,
        CandidateBuilder(paths.runner),
        default_workloads(cache_dir=paths.runner / "cache"),
        JobEvents(on_job=on_job, on_output=on_output, on_done=on_done),
    )
    try:
        with progress:
            agent.run(once=True)
            finished, total = open_jobs()
            progress.update(overall, completed=finished, total=total)
            progress.update(current, visible=False)
    finally:
        client.close()


def _summary(session: Session, toy: ToyRepository, console: Console) -> None:
    kinds = {commit.sha: commit for commit in toy.commits}
    base_sha = pr_base_sha(toy)
    for case in session.scalars(select(Case).where(Case.is_current.is_(True)).order_by(Case.slug)):
        data = series(session=session, case_slug=case.slug, hardware=HARDWARE)
        table = Table(
            title=f"{case.slug} on {HARDWARE} · median denoise step · threshold {data.threshold_pct} %"
        )
        for column in ("commit", "title", "ms/step", "change", "graph breaks", "scripted as"):
            table.add_column(
                column, justify="right" if column in ("ms/step", "change", "graph breaks") else "left"
            )
        breaks = dict(
            session.execute(
                select(Run.id, Run.graph_breaks).where(Run.id.in_([point.run_id for point in data.points]))
            ).all()
        )
        for point in data.points:
            commit = kinds.get(point.commit_sha)
            change = "" if point.change_pct is None else f"{point.change_pct:+.1f} %"
            style = ""
            if point.change_pct is not None and abs(point.change_pct) >= data.threshold_pct:
                style = "red" if point.change_pct > 0 else "green"
            table.add_row(
                point.commit_sha[:7],
                point.commit_title,
                f"{point.value:.2f}" if point.value is not None else f"failed: {point.failure_reason}",
                change,
                str(breaks.get(point.run_id) if breaks.get(point.run_id) is not None else "—"),
                _scripted(commit) + (" · PR base" if point.commit_sha == base_sha else ""),
                style=style,
            )
        console.print(table)
        _print_pr(session, case, toy, console)


def _scripted(commit: ToyCommit | None) -> str:
    """What the toy history says a commit does, in a few words."""
    if commit is None:
        return ""
    incident = f" (incident {commit.incident})" if commit.incident else ""
    return f"{commit.kind.value}{incident}"


def _print_pr(session: Session, case: Case, toy: ToyRepository, console: Console) -> None:
    rows = session.execute(
        select(Run.denoise_step_ms, Run.graph_breaks, Run.status, Run.failure_reason, Candidate.label)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(Run.case_id == case.id, Candidate.patch_count > 0)
    ).all()
    base = session.scalar(
        select(Run.denoise_step_ms)
        .join(Candidate, Candidate.id == Run.candidate_id)
        .where(
            Run.case_id == case.id,
            Candidate.patch_count == 0,
            Candidate.base_commit.has(sha=pr_base_sha(toy)),
        )
    )
    for value, graph_breaks, status, reason, label in rows:
        if value is None:
            console.print(f"PR candidate {label}: {status}: {reason}")
            continue
        versus = f" vs {base:.2f} for the bare base ({(value - base) / base * 100:+.1f} %)" if base else ""
        console.print(
            f"PR candidate [bold]{label}[/]: {value:.2f} ms/step{versus}, graph breaks {graph_breaks}"
        )


__all__ = ["run_demo"]
