"""A dashboard's worth of data, stored through the real ingest path (tracker functions a live
server would call): a nightly series with a confirmed, bisected regression, its fix, a failed
night, an imported regression with a hostile commit title, a PR comparison, an A/A calibration,
runners online and offline, and queued work; and, stored as rows, a suspect its paired rounds
left unconfirmed (the demo's alert 4: too noisy to call)."""

from __future__ import annotations

import datetime as dt
import random

from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.bench import LIMITS, Bench
from tests.tracker.views.alert_rows import unconfirmed_suspect
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import create_calibration, create_comparison
from tracker.enums import JobReason
from tracker.models import Commit, Job, utcnow
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.vcs.commits import ensure_candidate
from tracker.workflows.results import store_result
from wire import CommitIn, ResultIn

CASE = "qwen-image-t2i-1024"
NIGHTLY_CASE = "wan2.1-t2v-1.3b"
SUSPECT_CASE = "hunyuanvideo-t2v-480p"
HOSTILE_TITLE = 'Fuse <b>norm</b> & "friends" <script>window.pwned=1</script>'
CULPRIT, FIX, BROKEN = 34, 44, 39
COMMITS = 50


def sha(index: int) -> str:
    return f"{index + 0xA000:07x}" + "d" * 33


def commit_in(index: int) -> CommitIn:
    titles = {CULPRIT: "Wrap the fused RMSNorm in torch._dynamo.disable", FIX: "Fused RMSNorm as a custom op"}
    return CommitIn(
        sha=sha(index),
        parents=[sha(index - 1)] if index else [],
        title=titles.get(index, f"Refactor {index}: tidy the pipeline stages"),
        author_name=["Mira Castell", "Jonas Weber", "Priya Raman"][index % 3],
        committed_at=dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC) + dt.timedelta(hours=12 * index),
    )


def steps_of(value: float) -> list[float]:
    """30 denoise steps whose median is ``value``: a slow step 0 (compile), small jitter after."""
    rng = random.Random(round(value * 1000))
    rest = sorted(value * (1 + rng.gauss(0, 0.004)) for _ in range(28))
    middle = rest[13:15]
    shift = value - (middle[0] + middle[1]) / 2
    return [value * 1.21, *(step + shift for step in rng.sample(rest, len(rest))), value * 1.002]


def fill(session: Session) -> dict[str, int]:
    """Store everything; returns ids the browser tests look for."""
    for body in regression_payloads(HOSTILE_TITLE):
        store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
    bench = Bench(session, case=NIGHTLY_CASE, hardware="H200", runner="h200-node-07", steps=steps_of)
    for index in range(COMMITS):
        bench.commit(commit_in(index))
    rng = random.Random(2026)
    level = dict.fromkeys(range(COMMITS), 152.0)
    level |= dict.fromkeys(range(CULPRIT, FIX), 152.0 * 1.085)

    def measure(commit: Commit, job: Job) -> float | None:
        index = int(commit.sha[:7], 16) - 0xA000
        if index == BROKEN and job.reason is JobReason.NIGHTLY:
            return None
        return level[index] * (1 + rng.gauss(0, 0.004))

    nights = [index for index in range(COMMITS) if index < 30 or index % 3 == 0 or index >= 45]
    for index in nights:
        bench.nightly(commit_in(index))
        bench.drain(measure)
    base = session.get(Commit, bench.commit(commit_in(40)).id)
    assert base is not None
    comparison = create_comparison(
        session=session,
        base=ensure_candidate(session=session, base=base, patches=[]),
        head=ensure_candidate(session=session, base=base, patches=["refs/pull/43601/head"]),
        cases=[NIGHTLY_CASE],
        hardware=["H200"],
        rounds=2,
        max_rounds=8,
        requests_per_round=1,
        requested_by="pr-bot",
        pr_number=43601,
        pr_url="https://github.com/sgl-project/sglang/pull/43601",
        command="/perf",
    )
    calibration = create_calibration(
        session=session,
        candidate=ensure_candidate(session=session, base=base, patches=[]),
        cases=[NIGHTLY_CASE],
        hardware=["H200"],
        rounds=4,
        requests_per_round=1,
    )

    def arms(commit: Commit, job: Job) -> float | None:
        patched = not job.candidate.is_plain
        return level[40] * (0.93 if patched else 1.0) * (1 + rng.gauss(0, 0.003))

    bench.drain(arms)
    gb300 = get_hardware_kind(session=session, name="GB300")
    register_runner(
        session=session,
        name="gb300-node-02",
        hardware=gb300,
        gpu_count=4,
        labels={"rack": "b"},
        version="0.1.0",
        host="gb300-02",
        token=None,
        now=utcnow() - dt.timedelta(hours=3),
    )
    bench.runner.last_heartbeat_at = utcnow()  # the simulated nightly ran in the past; it is up now
    waiting = get_current_case(session=session, slug=CASE)
    for index in (46, 47, 48):
        enqueue_job(
            session=session,
            candidate=ensure_candidate(session=session, base=bench.commit(commit_in(index)), patches=[]),
            case=waiting,
            hardware=gb300,
            reason=JobReason.NIGHTLY,
        )
    suspect = unconfirmed_suspect(session, 4, case=SUSPECT_CASE)
    session.flush()
    return {"comparison": comparison.id, "calibration": calibration.id, "suspect": suspect.id}
