"""Hygiene on the bisection path: a flagged bisect run is measured again in its step's place, and a
commit whose runs stay flagged until the re-run budget is spent is skipped like one that cannot be
built."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import job_result
from tests.tracker.bench import LIMITS, Bench
from tests.tracker.detection.test_bisection import CULPRIT, repository  # noqa: F401 (the fixture)
from tracker.enums import JobReason
from tracker.ingest.results import IngestLimits
from tracker.models import Alert, Commit, Job, Run
from tracker.vcs.history import GitHistory
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result
from wire import CommitIn

pytestmark = pytest.mark.dialect

THROTTLED: dict[str, Any] = {
    "conditions": {
        "gpu": {"before": [{"index": 0, "throttle_reasons": ["hw_thermal_slowdown"]}], "after": []}
    }
}


class FlaggingBench(Bench):
    """A bench whose uploads carry the environment ``conditions(job)`` says; time moves a minute
    per job, and a flagged run is measured again for ``limits.rerun_budget_s``."""

    limits: IngestLimits = LIMITS

    def run_all(
        self, measure: Callable[[Commit, Job], float], conditions: Callable[[Job], dict[str, Any]]
    ) -> None:
        for _ in range(300):
            self.now += dt.timedelta(minutes=1)
            job = workflow_jobs.claim(session=self.session, runner=self.runner, now=self.now)
            if job is None:
                return
            value = measure(job.candidate.base_commit, job)
            result = job_result(job.attempts, step_times_ms=self.steps(value), environment=conditions(job))
            store_job_result(
                session=self.session,
                runner=self.runner,
                job_id=job.id,
                result=result,
                limits=self.limits,
                now=self.now,
            )
            self.follow_ups()
            self.ran.append(job)
        raise AssertionError("the queue did not drain")


def bisect_with(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
    flagged: Callable[[Job, int], bool],
    rerun_budget_s: float = LIMITS.rerun_budget_s,
) -> tuple[Alert, FlaggingBench, list[CommitIn]]:
    repo, commits = repository
    bench = FlaggingBench(session, history=GitHistory(tmp_path / "mirrors"))
    bench.limits = dataclasses.replace(LIMITS, rerun_budget_s=rerun_budget_s)
    assert bench.case.repository is not None
    bench.case.repository.url = str(repo)
    index_of = {commit.sha: index for index, commit in enumerate(commits)}
    rng = random.Random(1)
    seen: dict[int, int] = {}

    def measure(commit: Commit, job: Job) -> float:
        return (287.6 if index_of[commit.sha] >= CULPRIT else 263.7) * (1 + rng.gauss(0, 0.003))

    def conditions(job: Job) -> dict[str, Any]:
        if job.reason is not JobReason.BISECT:
            return {}
        index = index_of[job.candidate.base_commit.sha]
        seen[index] = seen.get(index, 0) + 1
        return THROTTLED if flagged(job, seen[index]) else {}

    for index in range(0, 55, 5):
        bench.nightly(commits[index])
        bench.run_all(measure, conditions)
    [alert] = session.scalars(select(Alert)).all()
    return alert, bench, commits


def test_a_flagged_bisect_run_is_measured_again_and_the_culprit_still_found(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    alert, bench, commits = bisect_with(session, repository, tmp_path, lambda job, nth: nth == 1)
    assert alert.bisection_state == "found"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[CULPRIT].sha
    flagged = session.scalars(select(Run).where(Run.measurement_flag.is_not(None))).all()
    assert flagged
    assert all(run.rerun_job_id is not None for run in flagged)  # each queued once more
    bisect_jobs = [job for job in bench.ran if job.reason is JobReason.BISECT]
    assert len(bisect_jobs) >= 2 * len(flagged)


def test_a_commit_flagged_until_the_budget_is_spent_is_skipped(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    alert, bench, _ = bisect_with(session, repository, tmp_path, lambda job, nth: True, rerun_budget_s=180)
    assert alert.bisection_state in ("found", "gave_up")
    skipped = [step for step in alert.bisection_steps if step.outcome == "skipped"]
    assert skipped
    # A minute per job: tried at 0, 1, 2 and 3 minutes after the first flagged try, then given up.
    assert all("flagged on all 4 tries in 180 s (budget 180 s)" in step.note for step in skipped)
    assert all(step.outcome != "pending" for step in alert.bisection_steps)
    bisect_jobs = [job for job in bench.ran if job.reason is JobReason.BISECT]
    assert len(bisect_jobs) == 4 * len(skipped)


def test_a_bisect_run_flagged_twice_and_then_clean_is_called(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    # Contention that lasts two tries (the old rule gave up after the second): the third counts.
    alert, _, commits = bisect_with(session, repository, tmp_path, lambda job, nth: nth <= 2)
    assert alert.bisection_state == "found"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[CULPRIT].sha
    assert not [step for step in alert.bisection_steps if step.outcome == "skipped"]
    notes = [step.note for step in alert.bisection_steps if step.note and "measuring again" in step.note]
    assert not notes  # each such note is replaced by the call once the clean run is in
    reruns = session.scalars(select(Run).where(Run.rerun_job_id.is_not(None))).all()
    assert len(reruns) == 2 * len({run.commit_id for run in reruns})
