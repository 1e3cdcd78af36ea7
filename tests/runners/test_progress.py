"""The agent's progress display, shared by ``perftrack runner`` and the demo."""

from __future__ import annotations

import io

from rich.console import Console

from runners.jobspec import CandidateSpec, CaseSpec, JobSpec, RepositorySpec
from runners.progress import JobProgress, job_label, outcome


def _job(job_id: int, patches: tuple[str, ...] = ()) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        attempt=1,
        reason="nightly",
        hardware="cpu",
        repository=RepositorySpec(name="toy", url="/tmp/toy"),
        candidate=CandidateSpec(base_sha="abcdef0123456789", patches=patches),
        case=CaseSpec(
            slug="toy-dit",
            version=1,
            model="toy",
            task="t2i",
            workload="toy",
            mode="generate",
            num_gpus=1,
            requests=1,
            timeout_s=60,
        ),
    )


def test_a_label_names_the_job_its_commit_and_its_patches() -> None:
    assert job_label(_job(12)) == "job 12 #1 nightly toy-dit @ abcdef0"
    pinned = _job(13, ("refs/pull/43601/head@0123abc", "fedcba9876543210"))
    assert job_label(pinned) == "job 13 #1 nightly toy-dit @ abcdef0 + #43601, fedcba9"


def test_the_outcome_is_the_median_step_or_the_failure() -> None:
    assert outcome({"status": "ok", "step_times_ms": [3.0, 1.0, 2.0]}) == "2.00 ms/step"
    assert outcome({"status": "ok", "denoise_step_mean_ms": 4.5}) == "4.50 ms/step"
    assert outcome({"status": "failed", "failure_reason": "OOM"}) == "failed: OOM"


def test_steps_move_the_bar_and_one_line_mode_reuses_its_line() -> None:
    display = JobProgress(Console(file=io.StringIO()), one_line=True)
    display.job(_job(1))
    display.output("denoise:  40%|####      | 8/20 [00:01<00:01]")
    (task,) = display.progress.tasks
    assert (task.completed, task.total) == (8, 20)
    display.done(_job(1), {"status": "ok", "step_times_ms": [2.0]})
    assert display.progress.tasks[0].description.endswith("· 2.00 ms/step")
    display.job(_job(2))
    assert [task.description for task in display.progress.tasks] == ["job 2 #1 nightly toy-dit @ abcdef0"]
    display.clear()
    assert display.progress.tasks == []


def test_the_runner_keeps_a_line_per_job() -> None:
    display = JobProgress(Console(file=io.StringIO()))
    done: list[int] = []
    events = display.events(on_done=lambda job, _payload: done.append(job.job_id))
    assert events.on_done is not None
    for job_id in (1, 2):
        display.job(_job(job_id))
        events.on_done(_job(job_id), {"status": "failed", "failure_reason": "timeout"})
    assert len(display.progress.tasks) == 2
    assert done == [1, 2]
