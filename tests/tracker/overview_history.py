"""The overview computed from scratch, and a varied history built through the real ingest paths.

:func:`reference_overview` computes the overview in Python over every run, alert and case (the
rules the overview had when it ranked runs in SQL on each request), to compare the overview that
reads ``series_latest`` with, field by field.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from tests.factories import job_result, result_body
from tests.tracker.views.alert_rows import paired_rounds
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import create_comparison, repository_of_cases, resolve_candidate
from tracker.enums import (
    AlertConfirmation,
    AlertStatus,
    ComparisonKind,
    Direction,
    EstimateBasis,
    JobReason,
    JobState,
    Metric,
    RunStatus,
)
from tracker.ingest.results import IngestLimits
from tracker.models import (
    Alert,
    Case,
    Commit,
    Comparison,
    HardwareKind,
    Job,
    Run,
    Runner,
    SeriesLatest,
)
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.series.latest import rebuild_series_latest
from tracker.views.overview import BASELINE_RUNS, SPARKLINE_RUNS, OverviewRow, RecentRegression
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.results import store_job_result, store_result
from wire import ResultIn

QWEN, FLUX = "qwen-image-t2i-1024", "flux1-dev-serve-gb300"
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
LIMITS = IngestLimits(max_log_bytes=1 << 20, max_steps_per_run=10_000)
FAILED: dict[str, Any] = {"status": "failed", "failure_reason": "CUDA out of memory"}
THROTTLED: dict[str, Any] = {
    "conditions": {
        "gpu": {"before": [{"index": 0, "throttle_reasons": ["sw_thermal_slowdown"]}], "after": []}
    }
}


# ------------------------------------------------------------------ the reference: every run, in Python


def reference_overview(session: Session) -> list[OverviewRow]:
    """The overview from first principles (what ranking every run on each request gave)."""
    session.flush()
    runs = session.scalars(select(Run).options(selectinload(Run.commit), selectinload(Run.candidate))).all()
    jobs = {job.id: job for job in session.scalars(select(Job))}
    alerts = session.scalars(select(Alert).options(selectinload(Alert.first_bad_commit))).all()
    paired = _reference_paired(session)
    series: dict[tuple[int, int], list[Run]] = defaultdict(list)
    for run in runs:
        series[(run.case_id, run.hardware_kind_id)].append(run)
    cases = session.scalars(
        select(Case).where(Case.is_current.is_(True)).options(selectinload(Case.hardware))
    ).all()
    kinds = {kind.id: kind for kind in session.scalars(select(HardwareKind))}
    rows = []
    for case in cases:
        kind_ids = {entry.hardware_kind_id for entry in case.hardware}
        kind_ids |= {kind_id for case_id, kind_id in series if case_id == case.id}
        for kind_id in kind_ids:
            key = (case.id, kind_id)
            rows.append(_reference_row(case, kinds[kind_id], series.get(key, []), jobs, alerts, paired))
    return sorted(rows, key=lambda row: (row.rank, row.family, row.case_slug, row.hardware))


def _reference_paired(session: Session) -> dict[int, float]:
    """Each alert's paired estimate: the first result of its newest confirmation comparison, if measured."""
    comparisons = session.scalars(
        select(Comparison)
        .where(Comparison.kind == ComparisonKind.CONFIRMATION)
        .options(selectinload(Comparison.results))
    ).all()
    newest: dict[int, Comparison] = {}
    for comparison in comparisons:
        if comparison.alert_id is not None and comparison.id > getattr(
            newest.get(comparison.alert_id), "id", 0
        ):
            newest[comparison.alert_id] = comparison
    return {
        alert_id: comparison.results[0].change_pct
        for alert_id, comparison in newest.items()
        if comparison.results and comparison.results[0].change_pct is not None
    }


def _suspect(alert: Alert) -> bool:
    """Paired rounds still deciding, or done without establishing it: no open alert, no regression."""
    return alert.confirmation in (
        AlertConfirmation.PENDING,
        AlertConfirmation.REFUTED,
        AlertConfirmation.TOO_NOISY,
    )


def _reference_row(
    case: Case,
    kind: HardwareKind,
    runs: list[Run],
    jobs: dict[int, Job],
    alerts: Any,
    paired: dict[int, float],
) -> OverviewRow:
    def job(run: Run) -> Job | None:
        return jobs.get(run.job_id) if run.job_id is not None else None

    points = sorted(
        (
            run
            for run in runs
            if run.status is RunStatus.OK
            and run.denoise_step_ms is not None
            and run.excluded_reason is None
            and run.candidate.patch_count == 0
            and (job(run) is None or job(run).comparison_id is None)  # type: ignore[union-attr]
        ),
        key=lambda run: (run.commit.committed_at, run.id),
        reverse=True,
    )
    nightlies = [run for run in runs if (found := job(run)) is not None and found.reason is JobReason.NIGHTLY]
    night = max(nightlies, key=lambda run: (run.measured_at or run.created_at, run.id), default=None)
    mine = [alert for alert in alerts if (alert.case_id, alert.hardware_kind_id) == (case.id, kind.id)]
    live = [a for a in mine if a.status is AlertStatus.OPEN and not _suspect(a)]
    head = points[0] if points else None
    before = [float(run.denoise_step_ms or 0) for run in points[1 : BASELINE_RUNS + 1]]
    return OverviewRow(
        case_slug=case.slug,
        case_title=case.title,
        model=case.model,
        family=case.model_family,
        suite=case.suite,
        hardware=kind.name,
        threshold_pct=case.threshold_for(kind.name),
        run_count=len(runs),
        failed_count=sum(run.status is RunStatus.FAILED for run in runs),
        latest_run_id=head.id if head else None,
        latest_value_ms=head.denoise_step_ms if head else None,
        latest_basis=head.denoise_step_basis if head else None,
        latest_commit_sha=head.commit.sha if head else None,
        latest_committed_at=head.commit.committed_at if head else None,
        previous_value_ms=before[0] if before else None,
        baseline_ms=statistics.median(before) if before else None,
        baseline_runs=len(before),
        recent_ms=tuple(float(run.denoise_step_ms or 0) for run in reversed(points[:SPARKLINE_RUNS])),
        open_regressions=sum(
            a.metric is not Metric.OUTPUT and a.direction is Direction.REGRESSION for a in live
        ),
        open_improvements=sum(
            a.metric is not Metric.OUTPUT and a.direction is Direction.IMPROVEMENT for a in live
        ),
        open_output_changes=sum(a.metric is Metric.OUTPUT for a in live),
        last_nightly_status=str(night.status) if night else None,
        last_nightly_at=(night.measured_at or night.created_at) if night else None,
        last_nightly_run_id=night.id if night else None,
        recent_regression=_reference_regression(mine, head, paired),
    )


def _reference_regression(
    alerts: list[Alert], head: Run | None, paired: dict[int, float]
) -> RecentRegression | None:
    candidates = [
        alert
        for alert in alerts
        if alert.direction is Direction.REGRESSION
        and alert.metric is not Metric.OUTPUT
        and not _suspect(alert)
        and alert.status not in (AlertStatus.INVALID, AlertStatus.EXPECTED)
    ]
    newest = max(candidates, key=lambda alert: (alert.first_bad_commit.committed_at, alert.id), default=None)
    if newest is None or head is None:
        return None
    if newest.first_bad_commit.committed_at < head.commit.committed_at - dt.timedelta(days=30):
        return None
    return RecentRegression(
        alert_id=newest.id,
        status=str(newest.status),
        change_pct=paired.get(newest.id, newest.change_pct),
        basis=EstimateBasis.PAIRED if newest.id in paired else EstimateBasis.DETECTION,
        first_bad_sha=newest.first_bad_commit.sha,
        first_bad_title=newest.first_bad_commit.title,
        first_bad_at=newest.first_bad_commit.committed_at,
    )


# ------------------------------------------------------------------ a varied history, through ingest


def sha(index: int) -> str:
    return f"{index:07x}"


def when(index: int) -> str:
    return (T0 + dt.timedelta(hours=index)).isoformat()


def upload(session: Session, case: str, hardware: str, index: int | None, value: float, **extra: Any) -> None:
    """Import one run of ``case`` on commit ``index`` (``None``: the commit with an estimated time)."""
    commit = {"sha": "e57e57e", "title": "no time given"} if index is None else {"sha": sha(index)}
    if index is not None:
        commit["committed_at"] = when(index)
    body = result_body(
        case=case,
        hardware=hardware,
        commit=commit,
        step_times_ms=[value + 10, value, value + 0.5, value - 0.25],
        denoise_step_mean_ms=None,
        **extra,
    )
    if body.get("status") == "failed":
        body["step_times_ms"] = []
    body = {key: value for key, value in body.items() if value is not None}
    store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS, now=T0)


def runner(session: Session, hardware: str) -> Runner:
    return register_runner(
        session=session,
        name=f"{hardware.lower()}-a",
        hardware=get_hardware_kind(session=session, name=hardware),
        gpu_count=8,
        labels={},
        version="t",
        host="h",
        token=None,
        now=T0,
    )


def run_job(session: Session, hardware: str, value: float, **extra: Any) -> Run:
    """Claim the next job on ``hardware`` and upload its run."""
    agent = runner(session, hardware)
    job = workflow_jobs.claim(session=session, runner=agent, now=T0)
    assert job is not None
    result = job_result(job.attempts, step_times_ms=[value] * 3, **extra)
    return store_job_result(
        session=session, runner=agent, job_id=job.id, result=result, limits=LIMITS, now=T0
    ).run


def nightly(session: Session, case: str, hardware: str, index: int) -> None:
    repository = repository_of_cases(session=session, cases=[case])
    enqueue_job(
        session=session,
        candidate=resolve_candidate(session=session, repository=repository, sha=sha(index)),
        case=get_current_case(session=session, slug=case),
        hardware=get_hardware_kind(session=session, name=hardware),
        reason=JobReason.NIGHTLY,
        purpose=f"night-{index}",
    )


def alert(session: Session, case: str, hardware: str, index: int, **fields: Any) -> Alert:
    first_bad = session.scalar(select(Commit).where(Commit.sha == sha(index)))
    last_good = session.scalar(select(Commit).where(Commit.sha == sha(index - 1)))
    assert first_bad is not None
    stored = Alert(
        case_id=get_current_case(session=session, slug=case).id,
        hardware_kind_id=get_hardware_kind(session=session, name=hardware).id,
        metric=fields.pop("metric", Metric.DENOISE_STEP_MS),
        first_bad_commit=first_bad,
        last_good_commit=last_good,
        before_value=100.0,
        after_value=110.0,
        change_pct=fields.pop("change_pct", 10.0),
        threshold_pct=3.0,
        **fields,
    )
    session.add(stored)
    session.flush()
    return stored


def build_history(session: Session) -> None:
    """Several series; ok, failed, flagged and patched imports, uploaded out of order; nightly runs
    (ok, failed, flagged, without a time); a comparison's runs on a plain commit; alerts."""
    shuffled = list(range(1, 27))
    random.Random(7).shuffle(shuffled)
    for index in shuffled:
        extra: dict[str, Any] = {}
        if index % 9 == 0:
            extra = FAILED
        elif index % 7 == 0:
            extra = {"environment": THROTTLED}
        upload(session, QWEN, "H200", index, 260.0 + index % 5, **extra)
    upload(session, QWEN, "H200", 25, 250.0, idempotency_key="second-run-of-25")  # two runs, one commit
    upload(session, QWEN, "H200", 26, 100.0, patches=["refs/pull/101/head"])  # a PR stack: no point
    for index in (3, 5, 4):
        upload(session, QWEN, "GB300", index, 200.0 + index)  # a kind the case is not set up for
    for index in (2, 6, 4):
        upload(session, FLUX, "GB300", index, 90.0 + index)
    upload(session, FLUX, "GB300", None, 95.0)  # the commit's time estimated: as of now
    for index, outcome in ((30, {"measured_at": when(31)}), (31, FAILED), (32, {})):
        nightly(session, QWEN, "H200", index)
        run_job(session, "H200", 255.0 + index % 3, **outcome)
    nightly(session, FLUX, "GB300", 27)
    run_job(session, "GB300", 80.0, environment=THROTTLED, measured_at=when(28))  # flagged, still nightly
    repository = repository_of_cases(session=session, cases=[QWEN])
    base = resolve_candidate(session=session, repository=repository, sha=sha(32))
    head = resolve_candidate(session=session, repository=repository, sha=sha(32), patches=["#43601"])
    create_comparison(session=session, base=base, head=head, cases=[QWEN], rounds=1, max_rounds=1)
    while session.scalar(select(Job).where(Job.state == JobState.QUEUED, Job.comparison_id.is_not(None))):
        run_job(session, "H200", 150.0)  # on the plain commit 32, but comparison runs: no point
    alert(session, QWEN, "H200", 20, status=AlertStatus.OPEN, direction=Direction.REGRESSION)
    alert(session, QWEN, "H200", 24, status=AlertStatus.EXPECTED, direction=Direction.REGRESSION)
    alert(session, QWEN, "H200", 10, status=AlertStatus.OPEN, direction=Direction.IMPROVEMENT)
    alert(session, FLUX, "GB300", 4, status=AlertStatus.FIXED, direction=Direction.REGRESSION, change_pct=5.0)
    # Neither a suspect paired rounds left unconfirmed nor a changed output is an open regression,
    # nor the series' newest regression, though both are newer than any other.
    noisy = alert(
        session,
        QWEN,
        "H200",
        32,
        status=AlertStatus.OPEN,
        direction=Direction.REGRESSION,
        confirmation=AlertConfirmation.TOO_NOISY,
    )
    paired_rounds(session, noisy, change_pct=1.4, interval=(-0.2, 3.0))
    alert(
        session,
        QWEN,
        "H200",
        31,
        status=AlertStatus.OPEN,
        direction=Direction.REGRESSION,
        metric=Metric.OUTPUT,
        change_pct=-32.1,
    )
    # A confirmed regression is shown with what its paired rounds measured.
    confirmed = alert(
        session,
        FLUX,
        "GB300",
        27,
        status=AlertStatus.ACKNOWLEDGED,
        direction=Direction.REGRESSION,
        confirmation=AlertConfirmation.CONFIRMED,
    )
    paired_rounds(session, confirmed, change_pct=4.2, interval=(3.1, 5.3))


def stored_rows(session: Session) -> dict[tuple[int, int], tuple[Any, ...]]:
    session.flush()
    session.expire_all()
    return {
        (row.case_id, row.hardware_kind_id): (
            row.points,
            row.nightly_run_id,
            row.nightly_status,
            row.nightly_at,
        )
        for row in session.scalars(select(SeriesLatest))
    }


def assert_rows_as_rebuilt(session: Session) -> None:
    """What ingest kept is exactly what a rebuild from ``runs`` writes (not saved by the fallback)."""
    kept = stored_rows(session)
    rebuild_series_latest(session=session)
    assert stored_rows(session) == kept
