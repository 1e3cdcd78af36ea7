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
3. ``/perf with #101`` commented on #102 by a maintainer on the fake GitHub: the bot compares
   #102's merge base with #101 stacked on it against the same with #102 too, in interleaved
   rounds until the verdict is clear;
4. ``/perf`` on #103, the open change that merges image tokens: faster, but its picture changes
   beyond the 40 dB tolerance, so its verdict is "faster, but the output changed";

with people in the loop as a deployment has them (:mod:`perftrack.demo.github`,
:mod:`perftrack.demo.loop`): a fake GitHub on localhost holds the toy repository's pull requests,
the tracker is its App (comments, check runs), ``/perf`` arrives as a signed webhook, the culprits'
pull requests are told, and a webhook receiver takes every notification. It then prints every
series, the alerts with their culprits and diagnoses (why each changed), the calibration, the
comparisons' verdicts with their confidence intervals and output checks, the loop with people
(groups, comments, check runs, notifications), a scorecard (each planted change found or missed,
output changes included, the alerts on neutral commits, read from the alerts API, and the loop's
rows) and where the demo's time went (:mod:`perftrack.demo.timing`), and keeps serving the
dashboard.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from perftrack.demo.github import GITHUB_URL, DemoGithub, demo_github, git_redirect
from perftrack.demo.loop import (
    Outboxes,
    demo_schedule,
    newest_comparison,
    queue_night,
    subscribe,
    wait_for_comparison,
)
from perftrack.demo.loop_report import print_loop
from perftrack.demo.loop_score import loop_checks
from perftrack.demo.loop_view import collect
from perftrack.demo.receiver import Inbox, receiving
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
from perftrack.demo.seeding import CALIBRATION_ROUNDS, changes, fixes, flags_on, seed, toy_cases
from perftrack.demo.serving import serve_asgi
from perftrack.demo.timing import breakdown, load_job_timings
from runners.http import TrackerHttp
from runners.toy import SUITE_TEMPLATE, ChangeKind, ToyPullRequest, ToyRepository, create_toy_repository
from tracker import db
from tracker.catalog.suites import ResolvedSchedule
from tracker.settings import Settings
from tracker.vcs.pulls import pull_number_in
from web.app import create_app

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
# A flagged toy run is measured again for this long after its first flagged try (each try after
# the runner's wait for a quiet moment, up to QUIET_WAIT_S): contention that comes and goes (a
# core loaded 15 s on, 20 s off) is waited out in a few tries; a machine busy for minutes on end
# gives up after a few more (the service's default, for GPU runs of minutes, is 15 minutes).
RERUN_BUDGET_S = 60


# The rounds a /perf comparison may grow to while inconclusive (the bot's one setting for every
# comparison: the fixes' comparison had 8 before the bot asked for it, #103's 6).
PERF_MAX_ROUNDS = 8
# The fixes' comparison measures both toy cases, as before the bot asked for it: a bare /perf on
# #102 would choose only the offload case (its one file is toydit/offload.py).
FIXES_CASES = "toy-dit-*"


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


@dataclass(frozen=True)
class Services:
    """What the demo runs beside its runner: the tracker, the fake GitHub and the webhook receiver."""

    url: str  # the tracker's
    settings: Settings
    github: DemoGithub
    github_url: str
    receiver_url: str
    inbox: Inbox


def run_demo(*, data_dir: Path, host: str, port: int, exit_after: bool, console: Console) -> int:
    """Run the demo; returns the process exit code: 0 when the scorecard held, 1 when it fell short."""
    started = time.monotonic()
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file: room for the tables' columns
    paths = DemoPaths(data_dir / "demo")
    toy = _prepare(paths, console)
    with _services(paths, toy, host, port) as services:
        url = services.url
        engine = db.make_engine(services.settings.effective_database_url)
        sessions = db.make_session_factory(engine)
        with db.session_scope(sessions) as session:
            token, admin = seed(session, toy)
        subscribe(url, admin, services.receiver_url, services.inbox.secret)
        console.print(
            f"tracker on [bold]{url}[/] · runner {RUNNER_NAME} · fake GitHub {services.github_url} "
            f"· webhook receiver {services.receiver_url}"
        )
        runner = DemoRunner(url, token, paths.runner, sessions, console, git_env=git_redirect(toy))
        comparison_ids = _run_jobs(runner, sessions, toy, services)
        perfect = _report(token, sessions, toy, comparison_ids, services, console)
        with sessions() as session:
            print_time_table(breakdown(load_job_timings(session=session), runner.phases), console)
        console.print(f"demo finished in {time.monotonic() - started:.0f} s")
        engine.dispose()
        if not exit_after:
            _serve_until_interrupted(url, console)
    # A script that runs the demo can tell a scorecard that fell short from one that held.
    return 0 if perfect else 1


@contextmanager
def _services(paths: DemoPaths, toy: ToyRepository, host: str, port: int) -> Iterator[Services]:
    """The webhook receiver, the fake GitHub (a free port) and the tracker (``port``), all on
    localhost, with git fetching the repository's GitHub address from the toy repository."""
    github = demo_github(toy)
    with ExitStack() as stack:
        stack.enter_context(_environment(git_redirect(toy)))  # the tracker's own git (bisection ranges)
        receiver_url, inbox = stack.enter_context(receiving(secrets.token_urlsafe(24)))
        github_url = stack.enter_context(serve_asgi(github.fake.app(), host, 0, name="fake GitHub"))
        settings = _demo_settings(paths, github.settings(github_url), public_url=f"http://{host}:{port}")
        url = stack.enter_context(serve_asgi(create_app(settings), host, port, name="tracker"))
        yield Services(url, settings, github, github_url, receiver_url, inbox)


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """This process's environment with ``values`` set, restored afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _prepare(paths: DemoPaths, console: Console) -> ToyRepository:
    """A fresh demo folder (the toy repository reused when current) with the toy suite pointing at it
    by its GitHub address (:func:`perftrack.demo.github.git_redirect`)."""
    _reset(paths)
    console.print(f"[bold]perftrack demo[/] in {paths.root}")
    toy = create_toy_repository(paths.repo, replace_outdated=True)
    console.print(
        f"toy repository: {len(toy.commits)} commits on main, {len(toy.pull_requests)} open pull requests"
    )
    paths.suites.mkdir(parents=True)
    (paths.suites / "toy.toml").write_text(SUITE_TEMPLATE.read_text().replace("{toy_repo}", GITHUB_URL))
    return toy


def _demo_settings(paths: DemoPaths, github: Mapping[str, Any], *, public_url: str) -> Settings:
    """The demo tracker's settings: SQLite in the demo folder, the toy suite, short leases, a
    re-run budget for toy runs of seconds, and the fake GitHub as its App."""
    return Settings(
        database_url=f"sqlite:///{paths.database}",
        data_dir=paths.root,
        suite_dir=paths.suites,
        lease_seconds=120,
        flagged_rerun_budget_s=RERUN_BUDGET_S,
        environment="development",
        public_url=public_url,
        github_max_rounds=PERF_MAX_ROUNDS,
        **github,
    )


def _run_jobs(
    runner: DemoRunner, sessions: sessionmaker[Session], toy: ToyRepository, services: Services
) -> list[int]:
    """Run the calibration, then night after night, then the ``/perf`` comparisons (the fixes
    stacked, then each open change of its own); returns the comparisons' ids, the fixes' first.

    After each phase the outboxes are sent (notifications, GitHub). The runner is closed afterwards,
    whatever happens.
    """
    outboxes = Outboxes(sessions, services.settings)
    try:
        runner.drain(f"A/A calibration ({CALIBRATION_ROUNDS} rounds per case)")
        outboxes.send()
        schedule = _schedule(sessions)
        nights = [commit for commit in toy.commits if commit.source not in SKIPPED_BY_NIGHTLY]
        for number, night in enumerate(nights, start=1):
            with db.session_scope(sessions) as session:
                queue_night(session, schedule, toy_cases(session), night.sha)
            runner.drain(f"night {number}/{len(nights)}: {night.sha[:7]} {night.title[:40]}")
            outboxes.send()
        fixing = fixes(toy)
        stacked = " ".join(f"#{pr.number}" for pr in fixing[:-1])
        command = f"/perf {FIXES_CASES}" + (f" with {stacked}" if stacked else "")
        comparison_id = _ask(sessions, services, fixing[-1], command)
        runner.drain("pull-request comparison of the fixes")
        outboxes.send()
        change_ids = [_ask(sessions, services, pr, "/perf") for pr in changes(toy)]
        if change_ids:
            runner.drain("pull-request comparison of " + ", ".join(f"#{pr.number}" for pr in changes(toy)))
            outboxes.send()
    finally:
        runner.close()
    return [comparison_id, *change_ids]


def _ask(sessions: sessionmaker[Session], services: Services, pr: ToyPullRequest, command: str) -> int:
    """A maintainer comments ``command`` on ``pr``; the comparison the bot made of it."""
    newest = newest_comparison(sessions)
    services.github.ask_perf(services.url, pr.number, command)
    return wait_for_comparison(sessions, pr.number, after=newest)


def _schedule(sessions: sessionmaker[Session]) -> ResolvedSchedule:
    """The toy suite's nightly schedule on main, fired by hand."""
    with sessions() as session:
        case = toy_cases(session)[0]
        assert case.repository is not None
        return demo_schedule(suite=case.suite, repository=case.repository.name, hardware=HARDWARE)


def _report(
    token: str,
    sessions: sessionmaker[Session],
    toy: ToyRepository,
    comparison_ids: list[int],
    services: Services,
    console: Console,
) -> bool:
    """Print the series, calibrations, alerts, the comparisons' verdicts, the loop with people and
    the scorecard; whether the scorecard held (:attr:`Scorecard.perfect`)."""
    with sessions() as session:
        print_series(session, toy, console)
        print_calibrations(session, console)
        print_alerts(session, toy, console)
        cases = toy_cases(session)
        case_flags = {case.slug: flags_on(case) for case in cases}
    with TrackerHttp.connect(services.url, token) as tracker:
        comparisons = [
            tracker.json("GET", f"/comparisons/{comparison_id}") for comparison_id in comparison_ids
        ]
        # Scored from what a user reads: the alerts API (suspects refuted by paired rounds are not alerts).
        alerts = tracker.request("GET", "/alerts", params={"limit": 200}).json()
        groups = tracker.request("GET", "/groups", params={"limit": 200}).json()
    for comparison in comparisons:
        print_comparison(comparison, console)
    print_diagnoses(alerts, console)
    culprits = [
        pull_number_in(commit.title) for commit in toy.commits if commit.kind is ChangeKind.REGRESSION
    ]
    view = collect(
        groups=groups,
        fake=services.github.fake,
        culprit_pulls=[number for number in culprits if number is not None],
        notifications=services.inbox.snapshot(),
    )
    print_loop(view, console)
    card = score(toy.commits, case_flags, alerts, comparisons[1:])
    policy = services.settings.github_check_policy
    loop = loop_checks(view, toy.commits, case_flags, comparisons, policy)
    card = replace(card, loop=loop)
    print_scorecard(card, console)
    return card.perfect


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


__all__ = ["run_demo"]
