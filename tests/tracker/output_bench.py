"""Seeded pictures for output-fidelity tests, and a Bench drain whose runs save them.

The runner's capture of outputs is its own piece of work; here each job's run is stored, its
output inserted as the runner would upload it (``wire.OutputIn``), then the tracker reacts to the
run as an upload does (:func:`tracker.workflows.reactions.after_job_run`) and does what the upload
leaves for after its answer (:meth:`~tests.tracker.bench.Bench.follow_ups`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from tests.factories import job_result
from tests.tracker.bench import LIMITS, Bench
from tracker.ingest.results import ingest_job_result
from tracker.models import Commit, Job
from tracker.outputs.storing import insert_outputs
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.reactions import after_job_run
from wire import CommitIn, OutputIn

Pixels = NDArray[np.uint8]
# What a commit's run saves: its picture, or None for a run that saved none.
Picture = Callable[[Commit, Job], Pixels | None]
STEP_MS = 263.7  # every run measures the same: no speed change to find


def base_picture(seed: int = 7) -> Pixels:
    """A 32×32 RGB picture with some structure (SSIM needs more than flat colour)."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, 32, dtype=np.float64)
    picture = ramp[None, :, None] + ramp[:, None, None] / 4 + rng.normal(0, 10, (32, 32, 3))
    return np.clip(picture, 0, 255).astype(np.uint8)


def changed(picture: Pixels, sigma: float = 12.0, seed: int = 3) -> Pixels:
    """The picture with noise of ``sigma`` grey levels: about 26 dB at 12, well above 40 dB at 0.5."""
    rng = np.random.default_rng(seed)
    noisy = picture.astype(np.float64) + rng.normal(0, sigma, picture.shape)
    return np.clip(np.round(noisy), 0, 255).astype(np.uint8)


def output_of(picture: Pixels) -> OutputIn:
    """The upload of a picture: the digest of its pixels and itself as the one PNG reference."""
    buffer = io.BytesIO()
    Image.fromarray(picture, "RGB").save(buffer, format="PNG")
    return OutputIn.model_validate(
        {
            "digest": "sha256:" + hashlib.sha256(picture.tobytes()).hexdigest(),
            "width": picture.shape[1],
            "height": picture.shape[0],
            "file_name": "output.png",
            "frames": [{"png_base64": base64.b64encode(buffer.getvalue()).decode()}],
        }
    )


def linear_history(count: int, start: dt.datetime | None = None) -> list[CommitIn]:
    """``count`` commits, each the first parent of the next, six hours apart."""
    start = start or dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC)
    commits: list[CommitIn] = []
    for index in range(count):
        sha = hashlib.sha256(f"commit {index}".encode()).hexdigest()[:40]
        commits.append(
            CommitIn(
                sha=sha,
                parents=[commits[-1].sha] if commits else [],
                title=f"Change {index}",
                author_name="Jonas Weber",
                committed_at=(start + dt.timedelta(hours=6 * index)).isoformat(),
            )
        )
    return commits


def drain_with_outputs(
    bench: Bench, picture: Picture, limit: int = 200, *, measure: Callable[[Commit], float] | None = None
) -> list[Job]:
    """Run every queued job as :meth:`Bench.drain` does, each run saving ``picture``'s output and
    measuring ``measure(commit)`` ms a step (default :data:`STEP_MS`)."""
    done: list[Job] = []
    for _ in range(limit):
        bench.now += dt.timedelta(minutes=1)
        job = workflow_jobs.claim(session=bench.session, runner=bench.runner, now=bench.now)
        if job is None:
            return done
        outcome = ingest_job_result(
            session=bench.session,
            runner=bench.runner,
            job_id=job.id,
            result=job_result(
                job.attempts,
                step_times_ms=[STEP_MS if measure is None else measure(job.candidate.base_commit)] * 5,
            ),
            limits=LIMITS,
            now=bench.now,
        )
        pixels = picture(job.candidate.base_commit, job)
        if pixels is not None:
            insert_outputs(bench.session, {outcome.run.id: output_of(pixels)})
        assert outcome.job is not None
        after_job_run(session=bench.session, job=outcome.job, run=outcome.run, now=bench.now)
        bench.follow_ups()
        done.append(job)
        bench.ran.append(job)
    raise AssertionError(f"the queue did not drain within {limit} jobs")
