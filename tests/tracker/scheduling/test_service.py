"""Nightly schedules: firing on a local git repository, backfill, missed fires, leader election."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tests.waiting import wait_until
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import ResolvedSchedule, load_suites
from tracker.enums import JobReason, JobState
from tracker.models import Job, NightlyRun, Repository, apscheduler_jobs
from tracker.scheduling.leader import LOCK_KEY, FileLeader, PostgresLeader
from tracker.scheduling.nightly import fire_nightly
from tracker.scheduling.service import SchedulerService, previous_fire_time
from tracker.settings import Settings
from tracker.vcs.branch_head import BranchUnavailable, ls_remote_head
from tracker.vcs.history import GitHistory

pytestmark = pytest.mark.dialect

NOW = dt.datetime(2026, 11, 29, 18, 0, 5, tzinfo=dt.UTC)
TEST_LOCK_KEY = LOCK_KEY - 1  # never the lock a live scheduler on the test database holds
ALL_SERIES = 7  # the tests' suite: four cases on H200, three on GB300


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Night Owl",
        "GIT_AUTHOR_EMAIL": "owl@example.invalid",
        "GIT_COMMITTER_NAME": "Night Owl",
        "GIT_COMMITTER_EMAIL": "owl@example.invalid",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def commit(repo: Path, title: str) -> str:
    git(repo, "commit", "--allow-empty", "--quiet", "-m", title)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A local repository standing in for sglang, with one commit on main."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit(repo, "Initial commit")
    return repo


@pytest.fixture
def repository(session: Session, upstream: Path) -> Repository:
    """The stored sglang repository, pointed at the local one (rolled back after the test)."""
    stored = session.scalar(select(Repository).where(Repository.name == "sglang"))
    assert stored is not None
    stored.url = str(upstream)
    session.flush()
    return stored


def schedule(**overrides: object) -> ResolvedSchedule:
    values: dict[str, object] = {
        "name": "test-nightly",
        "suite": "sglang-diffusion",
        "repository": "sglang",
        "cron": "0 2 * * *",
        "timezone": "Asia/Shanghai",
        "branch": "main",
        "hardware": ["H200", "GB300"],
        "backfill_limit": 0,
    }
    values.update(overrides)
    return ResolvedSchedule.model_validate(values)


def nightly_jobs(session: Session) -> list[Job]:
    return list(session.scalars(select(Job).where(Job.reason == JobReason.NIGHTLY).order_by(Job.id)))


# --- the suite's schedules --------------------------------------------------------------------


def test_suite_schedule_resolves_its_defaults() -> None:
    [suite] = load_suites(SUITES)
    [nightly] = suite.schedules
    assert nightly.branch == "main"  # the repository's default branch
    assert nightly.hardware == ["H200", "GB300"]
    assert nightly.backfill_limit == 10
    assert str(nightly.trigger().timezone) == "Asia/Shanghai"


# --- ls-remote --------------------------------------------------------------------------------


def test_ls_remote_resolves_a_local_branch_and_refuses_an_unknown_one(upstream: Path) -> None:
    assert ls_remote_head(str(upstream), "main") == git(upstream, "rev-parse", "HEAD")
    with pytest.raises(BranchUnavailable, match="not found"):
        ls_remote_head(str(upstream), "no-such-branch")
    with pytest.raises(BranchUnavailable, match="failed"):
        ls_remote_head(str(upstream / "missing"), "main")


# --- firing -----------------------------------------------------------------------------------


def test_fire_queues_every_case_and_hardware_once(
    session: Session, repository: Repository, upstream: Path
) -> None:
    head = git(upstream, "rev-parse", "HEAD")
    first = fire_nightly(session=session, schedule=schedule(), now=NOW, history=None)
    assert (first.error, first.commit_sha, first.branch) == (None, head, "main")
    assert (first.jobs_queued, first.jobs_existing) == (ALL_SERIES, 0)
    jobs = nightly_jobs(session)
    assert len(jobs) == ALL_SERIES
    assert {job.hardware_kind.name for job in jobs} == {"H200", "GB300"}
    assert all(job.state is JobState.QUEUED and job.candidate.base_commit.sha == head for job in jobs)

    again = fire_nightly(session=session, schedule=schedule(), now=NOW + dt.timedelta(days=1), history=None)
    assert (again.jobs_queued, again.jobs_existing) == (0, ALL_SERIES)
    assert len(nightly_jobs(session)) == ALL_SERIES

    newer = commit(upstream, "Fuse RMSNorm")
    third = fire_nightly(session=session, schedule=schedule(), now=NOW + dt.timedelta(days=2), history=None)
    assert (third.commit_sha, third.jobs_queued, third.jobs_existing) == (newer, ALL_SERIES, 0)
    assert len(nightly_jobs(session)) == 2 * ALL_SERIES
    runs = session.scalar(
        select(func.count()).select_from(NightlyRun).where(NightlyRun.schedule == "test-nightly")
    )
    assert runs == 3


def test_fire_on_some_hardware_only(session: Session, repository: Repository) -> None:
    run = fire_nightly(session=session, schedule=schedule(hardware=["GB300"]), now=NOW, history=None)
    assert run.jobs_queued == 3
    assert {job.hardware_kind.name for job in nightly_jobs(session)} == {"GB300"}


def test_unresolvable_branch_is_recorded_not_raised(session: Session, repository: Repository) -> None:
    run = fire_nightly(session=session, schedule=schedule(branch="release/v9"), now=NOW, history=None)
    assert run.id is not None
    assert run.commit_sha is None
    assert run.error is not None
    assert "release/v9" in run.error
    assert "not found" in run.error
    assert run.jobs_queued == 0
    assert nightly_jobs(session) == []


def test_same_scheduled_time_fires_once(session: Session, repository: Repository) -> None:
    when = dt.datetime(2026, 11, 29, 18, 0, tzinfo=dt.UTC)
    first = fire_nightly(session=session, schedule=schedule(), now=NOW, history=None, scheduled_for=when)
    second = fire_nightly(
        session=session,
        schedule=schedule(),
        now=NOW + dt.timedelta(seconds=3),
        history=None,
        scheduled_for=when,
    )
    assert second.id == first.id
    assert session.scalar(select(func.count()).select_from(NightlyRun)) == 1


def test_backfill_queues_unmeasured_commits_since_the_last_nightly(
    session: Session, repository: Repository, upstream: Path, tmp_path: Path
) -> None:
    history = GitHistory(tmp_path / "mirrors")
    nightly = schedule(backfill_limit=2)
    first = fire_nightly(session=session, schedule=nightly, now=NOW, history=history)
    assert first.backfilled == []  # nothing before the first nightly
    older = commit(upstream, "Add layerwise offload hooks")
    middle = commit(upstream, "Install hooks during compile warmup")
    newest = commit(upstream, "Wrap the fused norm in torch.library.custom_op")
    head = commit(upstream, "Reset dynamo after disable_offload")
    second = fire_nightly(session=session, schedule=nightly, now=NOW + dt.timedelta(days=1), history=history)
    assert second.commit_sha == head
    assert second.backfilled == [newest, middle]  # newest first, capped at two; `older` left out
    queued = {job.candidate.base_commit.sha for job in nightly_jobs(session)}
    assert {newest, middle, head} <= queued
    assert older not in queued
    stored = {job.candidate.base_commit.sha: job.candidate.base_commit for job in nightly_jobs(session)}
    assert stored[head].title == "Reset dynamo after disable_offload"  # metadata from the mirror
    assert stored[newest].branch == "main"
    # A third fire on the same head backfills nothing again.
    third = fire_nightly(session=session, schedule=nightly, now=NOW + dt.timedelta(days=2), history=history)
    assert (third.jobs_queued, third.backfilled) == (0, [])


def test_previous_fire_time_of_a_nightly_in_shanghai() -> None:
    trigger = CronTrigger.from_crontab("0 2 * * *", timezone="Asia/Shanghai")
    assert previous_fire_time(trigger, NOW) == dt.datetime(2026, 11, 29, 18, 0, tzinfo=dt.UTC)
    before = NOW - dt.timedelta(minutes=1)
    assert previous_fire_time(trigger, before) == dt.datetime(2026, 11, 28, 18, 0, tzinfo=dt.UTC)


# --- leader election --------------------------------------------------------------------------


def test_file_lock_elects_one_leader(tmp_path: Path) -> None:
    path = tmp_path / "perftrack.db.scheduler.lock"
    first, second = FileLeader(path), FileLeader(path)
    assert first.acquire()
    assert first.acquire()  # already leading
    assert not second.acquire()
    first.release()
    assert not first.is_held()
    assert second.acquire()
    assert not first.acquire()
    second.release()


def test_file_leaders_in_one_process_exclude_each_other_whatever_thread_acts(tmp_path: Path) -> None:
    path = tmp_path / "perftrack.db.scheduler.lock"
    first, second = FileLeader(path), FileLeader(path)
    won: list[bool] = []
    elector = threading.Thread(target=lambda: won.append(first.acquire()))
    elector.start()
    elector.join()
    assert won == [True]
    assert first.is_held()  # the instance leads, not the thread that won
    assert not second.acquire()
    assert not FileLeader(path).acquire()
    stopper = threading.Thread(target=first.release)
    stopper.start()
    stopper.join()
    assert not first.is_held()
    assert second.acquire()
    second.release()
    first.release()  # idempotent
    assert path.is_file()  # left in place: the next contender locks the same file


LEADING_PROCESS = """
import sys
from pathlib import Path
from tracker.scheduling.leader import FileLeader

leader = FileLeader(Path(sys.argv[1]))  # referenced: a collected lock is released
assert leader.acquire()
print("leading", flush=True)
sys.stdin.read()  # until killed
"""


def test_a_file_leader_that_dies_hands_over(tmp_path: Path) -> None:
    path = tmp_path / "perftrack.db.scheduler.lock"
    root = Path(__file__).resolve().parents[3]
    with subprocess.Popen(
        [sys.executable, "-c", LEADING_PROCESS, str(path)],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as leader:
        assert leader.stdout is not None
        assert leader.stdout.readline().strip() == "leading"
        contender = FileLeader(path)
        assert not contender.acquire()
        leader.kill()  # no release: the kernel drops the lock with the process
        leader.wait()
    assert contender.acquire()
    contender.release()


@pytest.fixture
def pg_url(db_url: str) -> str:
    if not db_url.startswith("postgres"):
        pytest.skip("advisory locks need PostgreSQL (PERFTRACK_TEST_DATABASE_URL)")
    return Settings(database_url=db_url).effective_database_url


def test_advisory_lock_elects_one_leader_and_fails_over(pg_url: str) -> None:
    first = PostgresLeader(pg_url, key=TEST_LOCK_KEY)
    second = PostgresLeader(pg_url, key=TEST_LOCK_KEY)
    try:
        assert first.acquire()
        assert not second.acquire()
        assert first.connection is not None
        first.connection.invalidate()  # the leader's connection dies; PostgreSQL drops its lock
        assert not first.is_held()
        assert second.acquire()
        assert not first.acquire()
    finally:
        first.dispose()
        second.dispose()


# --- the scheduler service on its own database ------------------------------------------------


@pytest.fixture
def scratch_engine(migrated_db_url: str) -> Iterator[Engine]:
    url = Settings(database_url=migrated_db_url).effective_database_url
    engine = db.make_engine(url)
    with db.session_scope(db.make_session_factory(engine)) as session:
        sync_suites(session=session, suites=load_suites(SUITES))
    yield engine
    engine.dispose()


def make_leader(engine: Engine, tmp_path: Path) -> FileLeader | PostgresLeader:
    url = engine.url.render_as_string(hide_password=False)
    if engine.dialect.name == "postgresql":
        return PostgresLeader(url, key=TEST_LOCK_KEY)
    return FileLeader(tmp_path / "scheduler.lock")


def service(engine: Engine, tmp_path: Path, nightly: ResolvedSchedule, **options: object) -> SchedulerService:
    return SchedulerService(
        engine=engine,
        schedules=[nightly],
        leader=make_leader(engine, tmp_path),
        resolver=lambda _url, _branch: "ab" * 20,
        periodic=False,
        retry_s=0.1,
        **options,  # type: ignore[arg-type]
    )


def nightly_runs(engine: Engine) -> list[NightlyRun]:
    with db.session_scope(db.make_session_factory(engine)) as session:
        return list(session.scalars(select(NightlyRun).order_by(NightlyRun.id)))


def stored_next_fire(engine: Engine) -> float:
    """The one stored nightly job's next fire time (POSIX seconds), as APScheduler's store holds it."""
    with engine.connect() as connection:
        [(next_run,)] = connection.execute(select(apscheduler_jobs.c.next_run_time)).all()
    return float(next_run)


def test_missed_fire_runs_once_when_the_scheduler_comes_back(scratch_engine: Engine, tmp_path: Path) -> None:
    # Hourly at the minute three minutes ago: the newest missed fire is recent (within the grace
    # time) and the next one is almost an hour away, so any second run would be a double.
    latest_fire = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) - dt.timedelta(minutes=3)
    nightly = schedule(cron=f"{latest_fire.minute} * * * *", timezone="UTC")
    first = service(scratch_engine, tmp_path, nightly)
    first.step()  # leads, stores the job with its next fire time
    assert first.is_leader
    first.stop()
    # The scheduler was down for three days (72 fire times): move the stored next fire back.
    missed_since = latest_fire - dt.timedelta(days=3)
    with scratch_engine.begin() as connection:
        row = connection.execute(select(apscheduler_jobs)).one()
        assert row.id == "test-nightly"
        state = pickle.loads(row.job_state)  # noqa: S301 - the test wrote this row itself
        state["next_run_time"] = missed_since
        connection.execute(
            update(apscheduler_jobs)
            .where(apscheduler_jobs.c.id == row.id)
            .values(
                job_state=pickle.dumps(state, pickle.HIGHEST_PROTOCOL), next_run_time=missed_since.timestamp()
            )
        )
    second = service(scratch_engine, tmp_path, nightly)
    second.step()
    try:
        wait_until(lambda: nightly_runs(scratch_engine), 30, "the missed fire to run")
        # Once the stored next fire time is an hour on, no missed fire is left to run: every run
        # of this wake-up was handed to the executor before the store moved on, and stop() waits
        # for the executor. No sleep-and-see: a slow machine cannot hide a second run.
        wait_until(lambda: stored_next_fire(scratch_engine) > time.time(), 30, "the store to move on")
    finally:
        second.stop()
    runs = nightly_runs(scratch_engine)
    assert len(runs) == 1
    [run] = runs
    assert run.commit_sha == "ab" * 20
    assert run.jobs_queued == ALL_SERIES
    assert run.scheduled_for is not None
    assert run.scheduled_for == latest_fire  # the newest missed fire, run once (coalesced)
    # The store moved on to the next hour: a restart does not run the missed fires again.
    assert stored_next_fire(scratch_engine) == pytest.approx(
        (latest_fire + dt.timedelta(hours=1)).timestamp()
    )


def test_two_services_one_leader_one_run_per_fire(scratch_engine: Engine, tmp_path: Path) -> None:
    nightly = schedule(name="every-second")
    options = {"trigger_for": lambda _schedule: IntervalTrigger(seconds=1)}
    first = service(scratch_engine, tmp_path, nightly, **options)
    second = service(scratch_engine, tmp_path, nightly, **options)
    first.start()
    second.start()
    try:
        wait_until(lambda: first.is_leader or second.is_leader, 30, "a leader")
        leader, follower = (first, second) if first.is_leader else (second, first)
        wait_until(lambda: len(nightly_runs(scratch_engine)) >= 2, 30, "two fires")
        assert not follower.is_leader
        leader.stop()  # the leader goes away; the follower takes over
        wait_until(lambda: follower.is_leader, 30, "the follower to lead")
        count = len(nightly_runs(scratch_engine))
        wait_until(lambda: len(nightly_runs(scratch_engine)) > count, 30, "the follower's fire")
    finally:
        first.stop()
        second.stop()
    runs = nightly_runs(scratch_engine)
    assert len(runs) >= 3
    fires = [run.scheduled_for for run in runs]
    assert len(set(fires)) == len(fires)  # one record per fire time, never two
    assert sum(run.jobs_queued for run in runs) == ALL_SERIES  # the same head is queued once
    threading_leftovers = [
        thread.name for thread in threading.enumerate() if thread.name == "perftrack-scheduler"
    ]
    assert threading_leftovers == []
