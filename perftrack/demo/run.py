"""``perftrack demo``: the whole loop on a laptop CPU, with no GPU and no network.

It creates the toy repository (a small DiT pipeline whose history holds both real incidents),
starts the tracker on SQLite and a CPU runner, and then does what the service does for sglang:

1. an A/A calibration of each toy case (the first commit against itself, in rounds), so
   detection knows how noisy this machine is;
2. nightly runs, night by night, on a schedule that skips the commits that introduced each
   regression (as a busy fleet does): each result feeds change detection, every suspect is
   confirmed or refuted by paired rounds of its last good and first bad commits before the next
   night comes in, and alerts whose last good and first bad nights are not adjacent are bisected
   to the culprit;
3. a pull-request comparison of both toy cases: the newest main commit that holds both
   regressions, against the same commit with the open fix branches (#101, #102) stacked on it,
   in interleaved rounds until the verdict is clear;
4. ``/perf #103``, the open change that merges image tokens: faster, but its picture changes
   beyond the 40 dB tolerance, so its verdict is "faster, but the output changed";

then prints every series, the alerts with their culprits and diagnoses (why each changed), the
calibration, the comparisons' verdicts with their confidence intervals and output checks, a
scorecard (each planted change found or missed, output changes included, and the alerts on
neutral commits, read from the alerts API) and where the demo's time went
(:mod:`perftrack.demo.timing`), and keeps serving the dashboard.
"""

from __future__ import annotations

import datetime as dt
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from rich.console import Console
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from perftrack.demo.report import (
    print_alerts,
    print_calibrations,
    print_comparison,
    print_diagnoses,
    print_scorecard,
    print_series,
    print_time_table,
)
from perftrack.demo.runner import HARDWARE, RUNNER_NAME, DemoRunner
from perftrack.demo.scorecard import score
from perftrack.demo.timing import breakdown, load_job_timings
from runners.gitmeta import commit_info
from runners.http import TrackerHttp
from runners.toy import SUITE_TEMPLATE, ToyPullRequest, ToyRepository, create_toy_repository
from tracker import db
from tracker.access.tokens import create_token
from tracker.catalog.cases import list_current_cases
from tracker.comparisons.creation import create_calibration, create_comparison
from tracker.detection.confirmation import POLICY as CONFIRMATION_POLICY
from tracker.enums import JobReason, TokenRole
from tracker.models import Case, Commit, HardwareKind, Repository
from tracker.queue.jobs import enqueue_job
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate, upsert_commit
from web.app import create_app
from wire import CommitIn

# Nightly runs skip the scripted regressions' commits (04-fused-layernorm, 10-offload-during-
# compile) and the neutral 05, so the tracker has to bisect to find them; the neutral first
# follow-up (02) and the release after the last fix (14) are skipped too, as a busy fleet skips
# commits: every run costs about 5 s of the demo's budget here.
SKIPPED_BY_NIGHTLY = (
    "02-document-flags",
    "04-fused-layernorm",
    "05-scheduler-tensor-sigmas",
    "10-offload-during-compile",
    "14-release-0.2.0",
)
# From three rounds on, one slow process cannot set the noise; one more than the degrees of
# freedom a confirmation takes from the noise prior at most (ConfirmationPolicy.max_prior_dof, 4:
# five rounds) gives the prior its whole weight, and each suspect's interval is narrower from its
# first rounds: a few more calibration jobs, fewer rounds per suspect (docs/demo.md, "Where the
# time goes").
CALIBRATION_ROUNDS = max(3, CONFIRMATION_POLICY.max_prior_dof + 1)
# A flagged toy run is measured again for this long after its first flagged try (each try after
# the runner's wait for a quiet moment, up to QUIET_WAIT_S): contention that comes and goes (a
# core loaded 15 s on, 20 s off) is waited out in a few tries; a machine busy for minutes on end
# gives up after a few more (the service's default, for GPU runs of minutes, is 15 minutes).
RERUN_BUDGET_S = 60


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
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file: room for the tables' columns
    paths = DemoPaths(data_dir / "demo")
    toy = _prepare(paths, console)
    settings = _demo_settings(paths)
    with _serve(settings, host, port) as url:
        engine = db.make_engine(settings.effective_database_url)
        sessions = db.make_session_factory(engine)
        with db.session_scope(sessions) as session:
            token = _seed(session, toy)
        console.print(f"tracker on [bold]{url}[/] · runner {RUNNER_NAME}")
        runner = DemoRunner(url, token, paths.runner, sessions, console)
        comparison_ids = _run_jobs(runner, sessions, toy)
        _report(url, token, sessions, toy, comparison_ids, console)
        with sessions() as session:
            print_time_table(breakdown(load_job_timings(session=session), runner.phases), console)
        console.print(f"demo finished in {time.monotonic() - started:.0f} s")
        engine.dispose()
        if exit_after:
            return 0
        _serve_until_interrupted(url, console)
    return 0


def _prepare(paths: DemoPaths, console: Console) -> ToyRepository:
    """A fresh demo folder (the toy repository reused when current) with the toy suite pointing at it."""
    _reset(paths)
    console.print(f"[bold]perftrack demo[/] in {paths.root}")
    toy = create_toy_repository(paths.repo, replace_outdated=True)
    console.print(
        f"toy repository: {len(toy.commits)} commits on main, {len(toy.pull_requests)} open pull requests"
    )
    paths.suites.mkdir(parents=True)
    (paths.suites / "toy.toml").write_text(SUITE_TEMPLATE.read_text().replace("{toy_repo}", str(paths.repo)))
    return toy


def _demo_settings(paths: DemoPaths) -> Settings:
    """The demo tracker's settings: SQLite in the demo folder, the toy suite, short leases, a
    re-run budget for toy runs of seconds."""
    return Settings(
        database_url=f"sqlite:///{paths.database}",
        data_dir=paths.root,
        suite_dir=paths.suites,
        lease_seconds=120,
        flagged_rerun_budget_s=RERUN_BUDGET_S,
        environment="development",
    )


def _seed(session: Session, toy: ToyRepository) -> str:
    """Store the toy's history and queue an A/A calibration per case; returns the runner token's secret."""
    token = create_token(session=session, name="demo-runner", role=TokenRole.RUNNER).secret
    cases = _toy_cases(session)
    commits = _store_history(session, toy, cases[0].repository)
    for case in cases:
        create_calibration(
            session=session,
            candidate=ensure_candidate(session=session, base=commits[0], patches=[]),
            cases=[case.slug],
            hardware=[HARDWARE],
            rounds=CALIBRATION_ROUNDS,
            requests_per_round=1,
            requested_by="demo",
            command="A/A calibration",
        )
    return token


def _run_jobs(runner: DemoRunner, sessions: sessionmaker[Session], toy: ToyRepository) -> list[int]:
    """Run the calibration, then night after night, then the PR comparisons (the fixes stacked, then
    each open change of its own); returns the comparisons' ids, the fixes' first.

    The runner is closed afterwards, whatever happens.
    """
    try:
        runner.drain(f"A/A calibration ({CALIBRATION_ROUNDS} rounds per case)")
        nights = [commit for commit in toy.commits if commit.source not in SKIPPED_BY_NIGHTLY]
        for number, night in enumerate(nights, start=1):
            with db.session_scope(sessions) as session:
                _enqueue_night(session, night.sha)
            runner.drain(f"night {number}/{len(nights)}: {night.sha[:7]} {night.title[:40]}")
        with db.session_scope(sessions) as session:
            comparison_id = _compare(session, toy)
        runner.drain("pull-request comparison of the fixes")
        with db.session_scope(sessions) as session:
            change_ids = [_compare_change(session, toy, pr) for pr in _changes(toy)]
        if change_ids:
            runner.drain("pull-request comparison of " + ", ".join(f"#{pr.number}" for pr in _changes(toy)))
    finally:
        runner.close()
    return [comparison_id, *change_ids]


def _report(
    url: str,
    token: str,
    sessions: sessionmaker[Session],
    toy: ToyRepository,
    comparison_ids: list[int],
    console: Console,
) -> None:
    """Print the series, calibrations, alerts, the comparison's verdict and the scorecard."""
    with sessions() as session:
        print_series(session, toy, console)
        print_calibrations(session, console)
        print_alerts(session, toy, console)
        case_flags = {case.slug: _flags_on(case) for case in _toy_cases(session)}
    with TrackerHttp.connect(url, token) as tracker:
        comparisons = [
            tracker.json("GET", f"/comparisons/{comparison_id}") for comparison_id in comparison_ids
        ]
        # Scored from what a user reads: the alerts API (suspects refuted by paired rounds are not alerts).
        alerts = tracker.request("GET", "/alerts", params={"limit": 200}).json()
    for comparison in comparisons:
        print_comparison(comparison, console)
    print_diagnoses(alerts, console)
    print_scorecard(score(toy.commits, case_flags, alerts, comparisons[1:]), console)


def _serve_until_interrupted(url: str, console: Console) -> None:
    """Keep the dashboard up until Ctrl-C."""
    console.print(f"dashboard: [bold]{url}/[/] (Ctrl-C to stop)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        console.print("stopped")


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


def _toy_cases(session: Session) -> list[Case]:
    cases = [case for case in list_current_cases(session=session) if case.workload.value == "toy"]
    if not cases or cases[0].repository is None:
        raise RuntimeError(f"the toy suite {SUITE_TEMPLATE} defines no toy case with a repository")
    return cases


def _store_history(session: Session, toy: ToyRepository, repository: Repository | None) -> list[Commit]:
    """Every main commit with its metadata, as a tracker that follows the branch knows them."""
    assert repository is not None
    stored = []
    for commit in toy.commits:
        info = commit_info(toy.path, commit.sha)
        stored.append(
            upsert_commit(
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
        )
    return stored


def _enqueue_night(session: Session, sha: str) -> None:
    kind = session.scalar(select(HardwareKind).where(HardwareKind.name == HARDWARE))
    assert kind is not None
    cases = _toy_cases(session)
    commit = session.scalar(select(Commit).where(Commit.sha == sha))
    assert commit is not None
    candidate = ensure_candidate(session=session, base=commit, patches=[])
    for case in cases:
        enqueue_job(session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.NIGHTLY)


def _fixes(toy: ToyRepository) -> list[ToyPullRequest]:
    """The open pull requests that fix a regression on main (#101, #102)."""
    return [pr for pr in toy.pull_requests if pr.fixes_sha is not None]


def _changes(toy: ToyRepository) -> list[ToyPullRequest]:
    """The open pull requests that are changes of their own (#103: faster, and the picture changes)."""
    return [pr for pr in toy.pull_requests if pr.fixes_sha is None]


def _compare(session: Session, toy: ToyRepository) -> int:
    """The fixes' PR comparison: a base with every open fix missing, against it with the fixes stacked."""
    base = session.scalar(select(Commit).where(Commit.sha == pr_base_sha(toy)))
    assert base is not None
    fixes = _fixes(toy)
    comparison = create_comparison(
        session=session,
        base=ensure_candidate(session=session, base=base, patches=[]),
        head=ensure_candidate(session=session, base=base, patches=[pr.ref for pr in fixes]),
        cases=[case.slug for case in _toy_cases(session)],
        hardware=[HARDWARE],
        rounds=2,
        max_rounds=8,
        requests_per_round=1,
        requested_by="demo",
        command="/perf " + " ".join(f"#{pr.number}" for pr in fixes),
    )
    return comparison.id


def _compare_change(session: Session, toy: ToyRepository, pr: ToyPullRequest) -> int:
    """``/perf #N`` for a change of its own: the commit it branches off, against it with the change."""
    base = session.scalar(select(Commit).where(Commit.sha == pr.base_sha))
    assert base is not None
    comparison = create_comparison(
        session=session,
        base=ensure_candidate(session=session, base=base, patches=[]),
        head=ensure_candidate(session=session, base=base, patches=[pr.ref]),
        cases=[case.slug for case in _toy_cases(session)],
        hardware=[HARDWARE],
        rounds=2,
        max_rounds=6,
        requests_per_round=1,
        requested_by="demo",
        command=f"/perf #{pr.number}",
    )
    return comparison.id


def _flags_on(case: Case) -> list[str]:
    """The flags a case passes (``false`` leaves a flag out)."""
    return [name for name, value in (case.flags or {}).items() if value not in (False, None, "false")]


def pr_base_sha(toy: ToyRepository) -> str:
    """The newest main commit on which every open fix is still missing: where stacking them matters."""
    shas = [commit.sha for commit in toy.commits]
    landed = min(shas.index(pr.landed_sha) for pr in _fixes(toy))
    return shas[landed - 1]


__all__ = ["run_demo"]
