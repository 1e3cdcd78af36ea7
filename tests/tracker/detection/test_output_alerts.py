"""Output alerts on nightly series: a changed seeded output between consecutive commits, bisected."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pytest
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.output_bench import (
    Pixels,
    base_picture,
    changed,
    drain_with_outputs,
    linear_history,
    output_of,
)
from tracker.diagnosis.facts import Finding, FindingKind, OutputFact
from tracker.diagnosis.loading import alert_diagnoses
from tracker.diagnosis.output_rule import output_finding, with_output
from tracker.enums import Direction, JobReason, Metric
from tracker.models import Alert, Commit, Job, Run
from tracker.outputs.storing import insert_outputs
from tracker.queue.jobs import enqueue_job
from tracker.vcs.commits import ensure_candidate
from tracker.workflows.reactions import evaluate_and_bisect
from tracker.workflows.sweep import sweep
from wire import CommitIn

BEFORE = base_picture()
AFTER = changed(BEFORE)  # about 26 dB: beyond the 40 dB tolerance
FAINT = changed(BEFORE, sigma=0.5)  # above 40 dB: the same picture


def nightly_series(
    session: Session, commits: list[CommitIn], measured: list[int], picture: Callable[[int], Pixels | None]
) -> Bench:
    """Nightly runs of the ``measured`` commits in order, each saving ``picture(index)``."""
    bench = Bench(session)
    for commit in commits:
        bench.commit(commit)
    index_of = {commit.sha: index for index, commit in enumerate(commits)}

    def save(commit: Commit, job: Job) -> Pixels | None:
        return picture(index_of[commit.sha])

    for index in measured:
        bench.nightly(commits[index])
        drain_with_outputs(bench, save)
    return bench


def output_alerts(session: Session) -> list[Alert]:
    return list(session.scalars(select(Alert).where(Alert.metric == Metric.OUTPUT).order_by(Alert.id)))


def test_a_changed_output_between_consecutive_nightly_commits_is_an_output_alert(session: Session) -> None:
    commits = linear_history(6)
    bench = nightly_series(session, commits, list(range(6)), lambda index: AFTER if index >= 3 else BEFORE)
    [alert] = output_alerts(session)
    assert alert.last_good_commit is not None
    assert alert.last_good_commit.sha == commits[2].sha
    assert alert.first_bad_commit.sha == commits[3].sha
    assert alert.confirmation == "not_needed"
    assert alert.direction == "regression"
    assert alert.output_psnr_db is not None
    assert 20 < alert.output_psnr_db < 32
    assert alert.output_ssim is not None
    assert alert.output_ssim < 0.95
    assert alert.before_value == 40.0
    assert alert.after_value == alert.output_psnr_db
    assert alert.change_pct < 0
    assert alert.evidence["tolerance_db"] == 40.0
    assert alert.evidence["output_summary"].startswith("output changed (PSNR")
    assert alert.evidence["after_run_id"] in alert.evidence["after_run_ids"]
    # Adjacent commits: the first bad commit is the culprit.
    assert alert.bisection_state == "not_needed"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[3].sha
    # Speed detection saw nothing: every run measured the same.
    assert session.scalars(select(Alert).where(Alert.metric != Metric.OUTPUT)).all() == []
    # Re-evaluating, or a sweep, opens nothing new.
    evaluate_and_bisect(session=session, case=bench.case, hardware=bench.kind, now=bench.now)
    sweep(session=session, now=bench.now)
    assert len(output_alerts(session)) == 1


def test_identical_or_within_tolerance_outputs_open_nothing(session: Session) -> None:
    commits = linear_history(6)
    pictures = {0: BEFORE, 1: BEFORE, 2: FAINT, 3: FAINT, 4: BEFORE, 5: BEFORE}
    nightly_series(session, commits, list(range(6)), pictures.__getitem__)
    assert output_alerts(session) == []


def test_runs_without_outputs_open_nothing(session: Session) -> None:
    commits = linear_history(4)
    nightly_series(session, commits, list(range(4)), lambda index: None)
    assert output_alerts(session) == []


def test_a_commit_without_output_is_skipped_for_the_one_before_it(session: Session) -> None:
    commits = linear_history(5)
    pictures = {0: BEFORE, 1: BEFORE, 2: None, 3: AFTER, 4: AFTER}
    nightly_series(session, commits, list(range(5)), pictures.__getitem__)
    [alert] = output_alerts(session)
    assert alert.last_good_commit is not None
    assert alert.last_good_commit.sha == commits[1].sha
    assert alert.first_bad_commit.sha == commits[3].sha


def test_one_evaluation_loads_a_series_with_outputs_once(session: Session) -> None:
    commits = linear_history(4)
    bench = nightly_series(session, commits, list(range(4)), lambda index: None)
    # The outputs arrive after the runs were evaluated: the evaluation counted below opens the alert.
    changed = {commit.sha for commit in commits[2:]}
    runs = session.scalars(select(Run).where(Run.case_id == bench.case.id)).all()
    insert_outputs(
        session, {run.id: output_of(AFTER if run.commit.sha in changed else BEFORE) for run in runs}
    )
    statements: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", count)
    try:
        touched = evaluate_and_bisect(session=session, case=bench.case, hardware=bench.kind, now=bench.now)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert [alert.metric for alert in touched] == [Metric.OUTPUT]
    assert touched[0].first_bad_commit.sha == commits[2].sha
    reads = [
        statement
        for statement in statements
        if statement.lstrip().upper().startswith("SELECT") and re.search(r"\b(FROM|JOIN) runs\b", statement)
    ]
    # The series load (speed detection and the output check share it) and the probe for any output.
    assert sum("runs.denoise_step_ms" in statement for statement in reads) == 1
    assert len(reads) == 2


def test_no_alert_when_the_first_bad_commit_s_runs_disagree(
    session: Session, caplog: pytest.LogCaptureFixture
) -> None:
    commits = linear_history(3)
    bench = nightly_series(session, commits, [0, 1, 2], lambda index: BEFORE)
    # A second run of commit 2 shows another picture: its own runs disagree, so the pipeline is
    # not deterministic there and one run against another says nothing about the commits.
    enqueue_job(
        session=session,
        candidate=ensure_candidate(session=session, base=bench.commit(commits[2]), patches=[]),
        case=bench.case,
        hardware=bench.kind,
        reason=JobReason.MANUAL,
    )
    [job] = drain_with_outputs(bench, lambda commit, job: AFTER)
    assert job.reason is JobReason.MANUAL
    with caplog.at_level(logging.INFO, logger="tracker.detection.output_alerts"):
        evaluate_and_bisect(session=session, case=bench.case, hardware=bench.kind, now=bench.now)
    assert output_alerts(session) == []
    assert "disagree among themselves" in caplog.text


def test_an_output_alert_over_skipped_commits_bisects_to_the_culprit(session: Session) -> None:
    commits = linear_history(21)
    culprit = 13
    bench = nightly_series(
        session, commits, [0, 5, 10, 15, 20], lambda index: AFTER if index >= culprit else BEFORE
    )
    [alert] = output_alerts(session)
    assert alert.last_good_commit is not None
    assert alert.last_good_commit.sha == commits[10].sha
    assert alert.first_bad_commit.sha == commits[15].sha
    assert alert.bisection_state == "found"
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[culprit].sha
    steps = alert.bisection_steps
    assert 2 <= len(steps) <= 3  # four commits in doubt
    assert {step.outcome for step in steps} <= {"good", "bad"}
    assert all("output" in step.note for step in steps)
    bisect_jobs = [job for job in bench.ran if job.reason is JobReason.BISECT]
    assert len(bisect_jobs) == len(steps)  # one run calls an output: no repeats, no paired rounds
    # A changed picture is shown by its outputs: no profiled evidence runs for an output culprit.
    assert not session.scalars(select(Job).where(Job.reason == JobReason.EVIDENCE)).all()
    # The bisection's runs of the culprit's range do not open a second alert.
    evaluate_and_bisect(session=session, case=bench.case, hardware=bench.kind, now=bench.now)
    assert len(output_alerts(session)) == 1


@pytest.mark.parametrize("picture_changed", [True, False])
def test_a_changed_output_makes_a_smaller_speed_shift_at_that_commit_a_suspect(
    session: Session, picture_changed: bool
) -> None:
    # 2.6 % run-to-run noise, then the newest commit's run 4 % faster: by itself never an alert (the
    # demo's #103 in the offload case, one nightly run); with its picture changed, a suspect for
    # paired rounds, as a commit whose compile counters moved is.
    commits = linear_history(10)
    levels = [100.0, 102.0, 99.0, 101.5, 98.5, 101.0, 99.5, 102.0, 100.0, 96.0]
    value_of = {commit.sha: level for commit, level in zip(commits, levels, strict=True)}
    measured_before: set[str] = set()

    def measure(commit: Commit) -> float:
        """The nightly run as listed; a paired re-run meets the commit's true level: 100 (the nightly
        spread was noise), the newest's 96 only when its picture changed too."""
        if commit.sha not in measured_before:
            measured_before.add(commit.sha)
            return value_of[commit.sha]
        return 96.0 if commit.sha == commits[-1].sha and picture_changed else 100.0

    bench = Bench(session)
    for index, commit in enumerate(commits):
        bench.nightly(commit)
        newest = index == len(commits) - 1
        drain_with_outputs(
            bench,
            lambda _commit, _job, newest=newest: AFTER if newest and picture_changed else BEFORE,
            measure=measure,
        )
    speed = session.scalars(select(Alert).where(Alert.metric == Metric.DENOISE_STEP_MS)).all()
    at_newest = [alert for alert in speed if alert.first_bad_commit.sha == commits[-1].sha]
    if not picture_changed:
        # Its nightly run was noise here: paired rounds may measure it, never confirm it.
        assert all(alert.confirmation == "refuted" for alert in at_newest)
        return
    [output_alert] = output_alerts(session)
    [suspect] = at_newest
    assert output_alert.first_bad_commit.sha == commits[-1].sha
    assert suspect.direction == "improvement"
    assert suspect.confirmation in ("pending", "confirmed", "refuted", "too_noisy")  # paired rounds decide
    assert suspect.change_pct == pytest.approx(-4.0, abs=1.5)


def test_a_speed_alert_whose_commit_changed_the_picture_says_so_first(session: Session) -> None:
    commits = linear_history(3)
    bench = nightly_series(session, commits, [0, 1, 2], lambda index: AFTER if index == 2 else BEFORE)
    [output_alert] = output_alerts(session)
    faster = Alert(
        case_id=bench.case.id,
        hardware_kind_id=bench.kind.id,
        metric=Metric.DENOISE_STEP_MS,
        direction=Direction.IMPROVEMENT,
        last_good_commit=output_alert.last_good_commit,
        first_bad_commit=output_alert.first_bad_commit,
        before_value=263.7,
        after_value=240.0,
        change_pct=-9.0,
        threshold_pct=2.0,
        evidence={},
        created_at=bench.now,
    )
    session.add(faster)
    session.flush()
    found = alert_diagnoses(session=session, alerts=[faster, output_alert])
    for alert in (faster, output_alert):
        first = found[alert.id][0]
        assert first.kind == "output"
        assert first.summary.startswith("output changed: PSNR ")
        assert first.summary.endswith("against the last good commit (tolerance 40 dB)")
    assert found[faster.id][0].detail["psnr_db"] == pytest.approx(output_alert.output_psnr_db)


def test_the_output_finding_is_said_only_for_a_change_and_comes_first() -> None:
    same = OutputFact(changed=False, tolerance_db=40.0, psnr_db=45.2, ssim=0.99)
    assert output_finding(same) is None
    assert output_finding(None) is None
    changed_output = OutputFact(changed=True, tolerance_db=40.0, psnr_db=27.14, ssim=0.8123)
    finding = output_finding(changed_output)
    assert finding is not None
    assert finding.summary == (
        "output changed: PSNR 27.1 dB, SSIM 0.812 against the last good commit (tolerance 40 dB)"
    )
    other = Finding(kind=FindingKind.COMPILE, summary="graph breaks 0 → 3", detail={}, weight=3.3)
    assert [item.kind for item in with_output([other], changed_output)] == ["output", "compile"]
