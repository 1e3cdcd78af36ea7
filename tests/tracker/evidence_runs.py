"""A simulated runner that answers evidence jobs as the real one does: the recorded toy output with
``TORCH_LOGS=graph_breaks,recompiles`` and a gzipped ``torch.profiler`` trace (``tests/data/evidence``).

After each upload :func:`drain` does what the upload route does after its answer
(:meth:`~tests.tracker.bench.Bench.follow_ups`): queued bisections start, and the evidence runs
uploads linked are read."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from tests.conftest import DATA
from tests.factories import job_result
from tests.tracker.bench import LIMITS, Bench, Measure
from tracker.enums import Arm, JobReason
from tracker.models import EvidenceJob, Job
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result
from wire import JobResultIn
from wire.files import FileIn

EVIDENCE = DATA / "evidence"
SIDES = {
    Arm.BASE: ("toy_good_torch_logs.log", "toy_good.trace.json.gz"),
    Arm.HEAD: ("toy_culprit_torch_logs.log", "toy_culprit.trace.json.gz"),
}
TRACE_NAME = "profile_trace-3_steps-global-rank0.trace.json.gz"


def evidence_upload(attempt: int, side: Arm, value: float = 300.0) -> JobResultIn:
    """What the runner uploads for an evidence job of ``side``: the log, the trace as a file."""
    log_name, trace_name = SIDES[side]
    return job_result(
        attempt,
        step_times_ms=[value] * 5,
        raw_log=(EVIDENCE / log_name).read_text(),
        files=[FileIn.of_bytes(TRACE_NAME, (EVIDENCE / trace_name).read_bytes()).model_dump()],
    )


def drain(bench: Bench, measure: Measure, limit: int = 200) -> list[Job]:
    """Like :meth:`Bench.drain`, evidence jobs answered with the recorded toy evidence."""
    done: list[Job] = []
    for _ in range(limit):
        bench.now += dt.timedelta(minutes=1)
        job = workflow_jobs.claim(session=bench.session, runner=bench.runner, now=bench.now)
        if job is None:
            return done
        if job.reason is JobReason.EVIDENCE:
            side = bench.session.scalars(select(EvidenceJob.side).where(EvidenceJob.job_id == job.id)).one()
            result = evidence_upload(job.attempts, side)
        else:
            value = measure(job.candidate.base_commit, job)
            assert value is not None
            result = job_result(job.attempts, step_times_ms=bench.steps(value))
        store_job_result(
            session=bench.session,
            runner=bench.runner,
            job_id=job.id,
            result=result,
            limits=LIMITS,
            now=bench.now,
            telling=bench.telling,
        )
        bench.follow_ups()
        done.append(job)
    raise AssertionError(f"the queue did not drain within {limit} jobs")
