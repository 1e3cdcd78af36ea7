"""Evidence for a culprit: bisection names it, its two sides are queued once as evidence jobs, their
profiled runs never count as measurements, and the diagnosis gains the new graph break and the
operators that grew."""

from __future__ import annotations

import random
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.detection.test_bisection import CULPRIT, repository  # noqa: F401 (the fixture)
from tests.tracker.evidence_runs import drain
from tracker.diagnosis.facts import FindingKind
from tracker.diagnosis.loading import alert_diagnosis
from tracker.enums import Arm, JobReason
from tracker.ingest.files import EVIDENCE_EXCLUSION
from tracker.models import Alert, Commit, EvidenceJob, Job, Run, RunFile
from tracker.series.state import load_series_runs
from tracker.vcs.history import GitHistory
from tracker.workflows.evidence import queue_culprit_evidence
from wire import CommitIn


def bisected(session: Session, repo: tuple[Path, list[CommitIn]], tmp_path: Path) -> tuple[Alert, Bench]:
    path, commits = repo
    bench = Bench(session, history=GitHistory(tmp_path / "mirrors"))
    assert bench.case.repository is not None
    bench.case.repository.url = str(path)
    index_of = {commit.sha: index for index, commit in enumerate(commits)}
    rng = random.Random(1)

    def measure(commit: Commit, job: Job) -> float:
        return (287.6 if index_of[commit.sha] >= CULPRIT else 263.7) * (1 + rng.gauss(0, 0.003))

    for index in range(0, 55, 5):
        bench.nightly(commits[index])
        drain(bench, measure)
    return session.scalars(select(Alert)).one(), bench


def test_a_named_culprit_queues_its_two_sides_once_and_their_runs_never_count(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    alert, bench = bisected(session, repository, tmp_path)
    commits = repository[1]
    assert alert.culprit_commit is not None
    assert alert.culprit_commit.sha == commits[CULPRIT].sha
    links = session.scalars(select(EvidenceJob).order_by(EvidenceJob.job_id)).all()
    assert [(link.side, link.alert_id) for link in links] == [(Arm.BASE, alert.id), (Arm.HEAD, alert.id)]
    jobs = {link.side: session.get(Job, link.job_id) for link in links}
    assert all(job is not None and job.reason is JobReason.EVIDENCE for job in jobs.values())
    base, head = jobs[Arm.BASE], jobs[Arm.HEAD]
    assert base is not None
    assert head is not None
    assert base.candidate.base_commit.sha == commits[CULPRIT - 1].sha  # the commit before the culprit
    assert head.candidate.base_commit.sha == commits[CULPRIT].sha
    assert queue_culprit_evidence(session=session, alert=alert) == []  # once
    # Both ran; each run is stored with its trace, excluded, and never a point of the series.
    runs = session.scalars(select(Run).where(Run.job_id.in_([base.id, head.id]))).all()
    assert len(runs) == 2
    assert all(run.excluded_reason == EVIDENCE_EXCLUSION for run in runs)
    assert all(link.run_id is not None and link.summary is not None for link in links)
    files = session.scalars(select(RunFile).where(RunFile.run_id.in_([run.id for run in runs]))).all()
    assert sorted(file.kind for file in files) == ["trace", "trace"]
    series = load_series_runs(session=session, case=bench.case, hardware=bench.kind)
    counted = {point.run_id for commit in series for point in commit.runs}
    assert counted
    assert not counted & {run.id for run in runs}
    assert len(session.scalars(select(Alert)).all()) == 1  # the evidence runs opened no alert


def test_the_alerts_diagnosis_names_the_new_graph_break_then_the_operators(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    alert, _ = bisected(session, repository, tmp_path)
    findings = alert_diagnosis(session=session, alert=alert)
    kinds = [finding.kind for finding in findings]
    assert FindingKind.GRAPH_BREAK in kinds
    assert FindingKind.OPERATOR in kinds
    assert kinds.index(FindingKind.GRAPH_BREAK) < kinds.index(FindingKind.OPERATOR)
    assert kinds[0] in (FindingKind.COMPILE, FindingKind.GRAPH_BREAK)
    graph_break = findings[kinds.index(FindingKind.GRAPH_BREAK)]
    assert graph_break.summary.startswith("new graph break at toydit/norm.py:19: ")
    assert "torch.compiler.disable" in graph_break.summary
