"""Evidence runs are read after the upload, not in it: the upload links the run and leaves its row
pending; the pending pass reads the log and trace into the summary once; a trace nothing can read
is logged and marked, never read again; the scheduler and the housekeeper take what is left."""

from __future__ import annotations

import datetime as dt
import gzip
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from tests.factories import job_result
from tests.tracker.bench import LIMITS, Bench
from tests.tracker.diagnosis_runs import BAD_LOG, GRAPH_BREAK_FACTOR, WHOLE_GRAPH, Shape, history
from tests.tracker.evidence_runs import EVIDENCE, TRACE_NAME, evidence_upload
from tests.tracker.queue.test_jobs import candidate, runner
from tests.tracker.scheduling.test_housekeeping import scratch_engine  # noqa: F401 (the fixture)
from tests.tracker.scheduling.test_service import make_leader
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.diagnosis import evidence_loading
from tracker.diagnosis.evidence import summarize
from tracker.diagnosis.evidence_loading import EvidenceInput, read_evidence
from tracker.diagnosis.facts import FindingKind
from tracker.diagnosis.loading import alert_diagnosis
from tracker.diagnosis.trace_stream import MAX_DEPTH
from tracker.enums import Arm, BisectionState, JobReason
from tracker.models import Alert, EvidenceJob, utcnow
from tracker.queue.jobs import enqueue_job
from tracker.scheduling.housekeeping import Chores, Housekeeper
from tracker.scheduling.service import PERIODIC_STORE, SchedulerService
from tracker.views.run_files import evidence_of_job
from tracker.workflows import evidence_reading
from tracker.workflows import jobs as workflow_jobs
from tracker.workflows.evidence import queue_culprit_evidence
from tracker.workflows.evidence_reading import (
    MAX_READ_ATTEMPTS,
    READ_CLAIM,
    pending_evidence,
    summarize_pending,
)
from tracker.workflows.results import store_job_result
from wire import JobResultIn
from wire.files import FileIn

pytestmark = pytest.mark.dialect

CORRUPT_GZIP = bytearray((EVIDENCE / "toy_culprit.trace.json.gz").read_bytes())
CORRUPT_GZIP[40:60] = b"\xff" * 20  # the gzip header is intact, the deflate stream is not
TOO_DEEP = gzip.compress(b"[" * 100_000)  # gunzips, then nests past the reader's depth


def culprit_alert(session: Session) -> Alert:
    """An alert whose culprit is named, its two evidence jobs queued."""
    good = Shape(compile=WHOLE_GRAPH)
    broken = Shape(steady=GRAPH_BREAK_FACTOR, compile={**WHOLE_GRAPH, "graph_breaks": 3}, log=BAD_LOG)
    history(session, [good, good, broken])
    alert = session.scalars(select(Alert)).one()
    alert.culprit_commit = alert.first_bad_commit  # adjacent commits: the first bad one is the culprit
    alert.bisection_state = BisectionState.NOT_NEEDED
    assert len(queue_culprit_evidence(session=session, alert=alert)) == 2
    return alert


def upload_both(bench: Bench, uploads: dict[Arm, bytes | None] | None = None) -> dict[Arm, EvidenceJob]:
    """Claim and upload both sides' evidence jobs as the upload route does (nothing is read after);
    ``uploads`` replaces a side's trace (``None``: a failed run)."""
    links: dict[Arm, EvidenceJob] = {}
    for _ in range(2):
        bench.now += dt.timedelta(minutes=1)
        job = workflow_jobs.claim(session=bench.session, runner=bench.runner, now=bench.now)
        assert job is not None
        assert job.reason is JobReason.EVIDENCE
        link = bench.session.get(EvidenceJob, job.id)
        assert link is not None
        result = evidence_upload(job.attempts, link.side)
        if uploads is not None and link.side in uploads:
            result = replaced(result, uploads[link.side])
        store_job_result(
            session=bench.session,
            runner=bench.runner,
            job_id=job.id,
            result=result,
            limits=LIMITS,
            now=bench.now,
        )
        links[link.side] = link
    return links


def replaced(result: JobResultIn, trace: bytes | None) -> JobResultIn:
    if trace is None:
        return job_result(
            result.attempt, status="failed", failure_reason="out of memory", raw_log=result.raw_log
        )
    files = [FileIn.of_bytes(TRACE_NAME, trace).model_dump()]
    return JobResultIn.model_validate({**result.model_dump(), "files": files})


def sql_null_summaries(session: Session) -> set[int]:
    """The rows whose summary is SQL NULL (a JSON ``null`` would count as a summary)."""
    return set(session.scalars(select(EvidenceJob.job_id).where(EvidenceJob.summary.is_(None))))


def test_an_upload_only_links_its_run_and_the_pending_pass_reads_it_once(
    session: Session, sessions: sessionmaker[Session]
) -> None:
    alert = culprit_alert(session)
    bench = Bench(session)
    links = upload_both(bench)
    uploaded_at = bench.now
    assert all(link.run_id is not None and link.recorded_at is not None for link in links.values())
    assert all(link.summary is None and link.summarized_at is None for link in links.values())
    assert pending_evidence(session=session) == sorted(link.job_id for link in links.values())
    # Pending: the diagnosis says what the measurements say, and the run page says it is being read.
    kinds = [finding.kind for finding in alert_diagnosis(session=session, alert=alert)]
    assert FindingKind.GRAPH_BREAK not in kinds
    assert FindingKind.OPERATOR not in kinds
    shown = evidence_of_job(session=session, job_id=links[Arm.HEAD].job_id)
    assert shown is not None
    assert shown.being_read

    later = uploaded_at + dt.timedelta(seconds=5)
    session.flush()
    # As the service does it: a session per step, no transaction held while a trace is parsed.
    assert summarize_pending(sessions=sessions, clock=lambda: later) == 2
    session.expire_all()
    for link in links.values():
        assert link.read_attempts == 1
        assert link.summarized_at == later
        assert link.recorded_at is not None
        assert link.recorded_at <= uploaded_at
        assert link.summary is not None
        assert link.summary["trace_error"] is None
    assert pending_evidence(session=session) == []
    assert summarize_pending(sessions=sessions, clock=lambda: later) == 0  # once
    kinds = [finding.kind for finding in alert_diagnosis(session=session, alert=alert)]
    assert FindingKind.GRAPH_BREAK in kinds
    assert FindingKind.OPERATOR in kinds
    shown = evidence_of_job(session=session, job_id=links[Arm.HEAD].job_id)
    assert shown is not None
    assert not shown.being_read


def test_a_failed_evidence_run_is_marked_read_without_a_summary(
    session: Session, sessions: sessionmaker[Session]
) -> None:
    culprit_alert(session)
    links = upload_both(Bench(session), {Arm.BASE: None})
    session.flush()
    assert summarize_pending(sessions=sessions) == 2
    base, head = links[Arm.BASE], links[Arm.HEAD]
    session.expire_all()
    assert base.summarized_at is not None
    assert sql_null_summaries(session) == {base.job_id}
    assert head.summary is not None
    assert pending_evidence(session=session) == []


def test_corrupt_traces_are_logged_and_marked_and_never_read_again(
    session: Session, sessions: sessionmaker[Session], caplog: pytest.LogCaptureFixture
) -> None:
    alert = culprit_alert(session)
    links = upload_both(Bench(session), {Arm.BASE: bytes(CORRUPT_GZIP), Arm.HEAD: TOO_DEEP})
    session.flush()
    with caplog.at_level(logging.WARNING, logger="tracker.diagnosis.evidence_loading"):
        # As the service does it: a session per step, no transaction held while a trace is parsed.
        assert summarize_pending(sessions=sessions) == 2
    base, head = links[Arm.BASE], links[Arm.HEAD]
    session.expire_all()
    assert base.summarized_at is not None
    assert head.summarized_at is not None
    # A gzip stream broken inside: read as far as the log goes, the trace's error kept.
    assert base.summary is not None
    assert base.summary["trace_error"].startswith("not a gzip file: ")
    assert base.summary["operators_ms_per_step"] is None
    assert base.summary["graph_breaks"] == []  # the good side's log has none
    # A trace nested deeper than any profile (once a RecursionError): refused as it streams.
    assert head.summary is not None
    assert head.summary["trace_error"] == f"nested deeper than {MAX_DEPTH} levels"
    assert sql_null_summaries(session) == set()
    messages = [record.getMessage() for record in caplog.records]
    assert any(f"job {base.job_id}): trace not read: not a gzip file" in message for message in messages)
    assert any(f"job {head.job_id}): trace not read: nested deeper" in message for message in messages)
    caplog.clear()
    assert summarize_pending(sessions=sessions) == 0  # marked: not tried again
    assert caplog.records == []
    kinds = [finding.kind for finding in alert_diagnosis(session=session, alert=alert)]
    assert FindingKind.GRAPH_BREAK in kinds  # both logs were read
    assert FindingKind.OPERATOR not in kinds  # neither trace was


def test_a_trace_no_reader_survives_is_logged_and_marked_without_a_summary(
    session: Session,
    sessions: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    culprit_alert(session)
    links = upload_both(Bench(session))
    session.flush()
    head = links[Arm.HEAD]

    def crashing(raw_log: str, trace: bytes | None) -> dict[str, object]:
        if raw_log == head_log:
            raise RecursionError("maximum recursion depth exceeded")
        return summarize(raw_log, trace)

    head_log = evidence_upload(1, Arm.HEAD).raw_log
    monkeypatch.setattr(evidence_loading, "summarize", crashing)
    with caplog.at_level(logging.WARNING, logger="tracker.diagnosis.evidence_loading"):
        assert summarize_pending(sessions=sessions) == 2
    session.expire_all()
    assert head.summarized_at is not None
    assert sql_null_summaries(session) == {head.job_id}
    failed = [
        record for record in caplog.records if f"job {head.job_id}) could not be read" in record.getMessage()
    ]
    assert len(failed) == 1
    assert failed[0].exc_info is not None
    assert failed[0].exc_info[0] is RecursionError
    assert summarize_pending(sessions=sessions) == 0  # marked: not tried again


def test_a_row_being_read_is_left_to_its_reader(
    session: Session, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    culprit_alert(session)
    links = upload_both(Bench(session))
    session.flush()
    parsed: list[int] = []
    overlapping: list[int] = []

    def reading(item: EvidenceInput) -> dict[str, object] | None:
        parsed.append(item.job_id)
        if len(parsed) == 1:
            # While the first trace is parsed, another reader's pass (the housekeeper's) runs.
            overlapping.append(summarize_pending(sessions=sessions))
        return read_evidence(item)

    monkeypatch.setattr(evidence_reading, "read_evidence", reading)
    assert summarize_pending(sessions=sessions) == 1
    session.expire_all()
    base, head = links[Arm.BASE], links[Arm.HEAD]
    # The other pass left the row being read and read the other one: each trace parsed once.
    assert overlapping == [1]
    assert parsed == [base.job_id, head.job_id]
    assert (base.read_attempts, head.read_attempts) == (1, 1)
    assert base.summary is not None
    assert head.summary is not None
    assert base.reading_until is None
    assert head.reading_until is None


class ReaderKilled(BaseException):
    """What the operating system does to a reader a trace runs out of memory: nothing catches it."""


def test_a_trace_whose_readings_never_finish_is_given_up_after_three(
    session: Session,
    sessions: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    culprit_alert(session)
    links = upload_both(Bench(session))
    session.flush()

    def killed(_item: object) -> None:
        raise ReaderKilled

    start = utcnow()

    def claims_later(claims: int) -> Callable[[], dt.datetime]:
        return lambda: start + claims * READ_CLAIM

    monkeypatch.setattr(evidence_reading, "read_evidence", killed)
    for attempt in range(1, MAX_READ_ATTEMPTS + 1):
        # Each pass comes after the dead reader's claim ran out.
        with pytest.raises(ReaderKilled):
            summarize_pending(sessions=sessions, clock=claims_later(attempt))
        session.expire_all()
        first = links[Arm.BASE]  # the oldest pending row is read first, and kills its reader
        assert (first.read_attempts, first.summarized_at) == (attempt, None)
    # The first row is given up; the second is read next, and kills its reader.
    with (
        caplog.at_level(logging.ERROR, logger="tracker.workflows.evidence_reading"),
        pytest.raises(ReaderKilled),
    ):
        summarize_pending(sessions=sessions, clock=claims_later(MAX_READ_ATTEMPTS + 1))
    session.expire_all()
    base, head = links[Arm.BASE], links[Arm.HEAD]
    assert base.summarized_at is not None
    assert base.job_id in sql_null_summaries(session)
    assert head.summarized_at is None
    assert head.read_attempts == 1
    assert any(f"(job {base.job_id}) given up after 4 readings" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()  # the reader survives again: the other row is read as usual
    # Not while the dead reader's claim holds it; once the claim ran out.
    assert summarize_pending(sessions=sessions, clock=claims_later(MAX_READ_ATTEMPTS + 1)) == 0
    assert summarize_pending(sessions=sessions, clock=claims_later(MAX_READ_ATTEMPTS + 2)) == 1
    session.expire_all()
    assert head.summary is not None
    assert pending_evidence(session=session) == []


def pending_row(engine: Engine) -> int:
    """A committed evidence job whose run is uploaded and not read yet; its job id."""
    with db.session_scope(db.make_session_factory(engine)) as session:
        case = get_current_case(session=session, slug="qwen-image-t2i-1024")
        kind = get_hardware_kind(session=session, name="H200")
        job = enqueue_job(
            session=session,
            candidate=candidate(session, "aaaaaaa"),
            case=case,
            hardware=kind,
            reason=JobReason.EVIDENCE,
        ).job
        session.add(EvidenceJob(job_id=job.id, side=Arm.HEAD))
        agent = runner(session)
        now = utcnow()
        assert workflow_jobs.claim(session=session, runner=agent, now=now) is job
        upload = evidence_upload(job.attempts, Arm.HEAD)
        store_job_result(session=session, runner=agent, job_id=job.id, result=upload, limits=LIMITS, now=now)
        assert pending_evidence(session=session) == [job.id]
        return job.id


def read_summary(engine: Engine, job_id: int) -> EvidenceJob:
    with db.session_scope(db.make_session_factory(engine)) as session:
        link = session.get(EvidenceJob, job_id)
        assert link is not None
        return link


def test_the_housekeeper_reads_what_the_uploads_left(scratch_engine: Engine) -> None:  # noqa: F811
    job_id = pending_row(scratch_engine)
    assert Housekeeper(scratch_engine).tick() == Chores(expired=0, touched=0, summarized=1)
    link = read_summary(scratch_engine, job_id)
    assert link.summarized_at is not None
    assert link.summary is not None
    assert link.summary["graph_breaks"]
    assert Housekeeper(scratch_engine).tick() == Chores(0, 0, 0)


def test_the_scheduler_reads_what_the_uploads_left(scratch_engine: Engine, tmp_path: Path) -> None:  # noqa: F811
    job_id = pending_row(scratch_engine)
    service = SchedulerService(
        engine=scratch_engine, schedules=[], leader=make_leader(scratch_engine, tmp_path), retry_s=0.1
    )
    service.step()  # leads: the periodic tasks are registered
    try:
        assert service.scheduler is not None
        task = service.scheduler.get_job("evidence", jobstore=PERIODIC_STORE)
        assert task is not None
        assert task.func == service.summarize_evidence
    finally:
        service.stop()
    assert service.summarize_evidence() == 1
    assert read_summary(scratch_engine, job_id).summary is not None
    assert service.summarize_evidence() == 0
