"""Alembic: the initial migration goes up and down on the backend under test, and matches the models."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect, select, text

from tests.conftest import SUITES
from tests.tracker.queue.test_jobs import candidate
from tests.tracker.workflows.test_evidence_reading import pending_row
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.detection.alert_log import record
from tracker.enums import AlertConfirmation, Arm, BisectionState, Direction, JobReason, Metric, OutboxKind
from tracker.github import outbox
from tracker.models import Alert, Base, BisectionStep, Case, Commit, EvidenceJob, HardwareKind, JobAttempt
from tracker.queue.jobs import enqueue_job, finish_job, release_job
from tracker.queue.runners import register_runner
from tracker.vcs.commits import ensure_candidate
from tracker.workflows import jobs as workflow_jobs

pytestmark = pytest.mark.dialect


def test_upgrade_downgrade_upgrade(scratch_db_url: str) -> None:
    engine = db.make_engine(scratch_db_url)
    try:
        assert db.current_revision(engine) is None
        db.upgrade(scratch_db_url)
        assert db.current_revision(engine) == db.head_revision()
        tables = set(inspect(engine).get_table_names())
        assert set(Base.metadata.tables) <= tables
        db.downgrade(scratch_db_url, "base")
        assert db.current_revision(engine) is None
        assert set(inspect(engine).get_table_names()) - {"alembic_version"} == set()
        db.upgrade(scratch_db_url)
        assert db.current_revision(engine) == db.head_revision()
    finally:
        engine.dispose()


def test_models_and_migrations_do_not_drift(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_0002_counts_the_patches_of_existing_candidates(scratch_db_url: str) -> None:
    from sqlalchemy import text

    db.upgrade(scratch_db_url, "0001")
    engine = db.make_engine(scratch_db_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO repositories (id, name, url, default_branch) VALUES (1, 'r', 'u', 'main')")
            )
            connection.execute(
                text(
                    "INSERT INTO commits (id, repository_id, sha, parents, title, author_name, author_email, "
                    "committed_at, committed_at_estimated) VALUES (1, 1, 'abcdef0', '[]', '', '', '', "
                    "'2026-01-01 00:00:00', false)"
                )
            )
            for candidate, patches in ((1, 0), (2, 2)):
                connection.execute(
                    text(
                        "INSERT INTO candidates (id, key, repository_id, base_commit_id, label) VALUES (:i, :k, 1, 1, '')"
                    ),
                    {"i": candidate, "k": f"key-{candidate}"},
                )
                for position in range(patches):
                    connection.execute(
                        text(
                            "INSERT INTO candidate_patches (candidate_id, position, kind, ref, title) "
                            "VALUES (:c, :p, 'commit', :r, '')"
                        ),
                        {"c": candidate, "p": position, "r": f"{position:07x}"},
                    )
        db.upgrade(scratch_db_url)
        with engine.connect() as connection:
            counts = dict(
                connection.execute(text("SELECT id, patch_count FROM candidates ORDER BY id")).all()
            )
        assert counts == {1: 0, 2: 2}
    finally:
        engine.dispose()


def _states_and_attempts(url: str) -> dict[str, Any]:
    """Real rows at head: a job with released, expired, failed and done attempts; alerts; outbox rows."""
    t0 = dt.datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    engine = db.make_engine(url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
            case = session.scalars(select(Case).order_by(Case.id)).first()
            assert case is not None
            assert case.repository is not None
            kind = session.scalar(select(HardwareKind).where(HardwareKind.name == case.hardware_names[0]))
            assert kind is not None
            commits = [
                Commit(repository=case.repository, sha=f"{n:07x}", parents=[], committed_at=t0)
                for n in range(4)
            ]
            session.add_all(commits)
            session.flush()
            candidate = ensure_candidate(session=session, base=commits[0], patches=[])
            one, two = (
                register_runner(
                    session=session,
                    name=name,
                    hardware=kind,
                    gpu_count=8,
                    labels={},
                    version="t",
                    host="h",
                    token=None,
                    now=t0,
                )
                for name in ("one", "two")
            )
            job = enqueue_job(
                session=session,
                candidate=candidate,
                case=case,
                hardware=kind,
                reason=JobReason.NIGHTLY,
                max_attempts=3,
            ).job
            minute = dt.timedelta(minutes=1)
            workflow_jobs.claim(session=session, runner=one, now=t0)
            release_job(
                session=session, runner=one, job_id=job.id, attempt=1, reason="shutting down", now=t0 + minute
            )
            workflow_jobs.claim(session=session, runner=two, lease=minute, now=t0 + 2 * minute)
            workflow_jobs.expire(session=session, now=t0 + 4 * minute)
            workflow_jobs.claim(session=session, runner=one, now=t0 + 5 * minute)
            finish_job(job=job, runner=one, failure_reason="exit code 1", now=t0 + 6 * minute)
            done = enqueue_job(
                session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.MANUAL
            ).job
            workflow_jobs.claim(session=session, runner=two, now=t0 + 7 * minute)
            finish_job(job=done, runner=two, failure_reason=None, now=t0 + 8 * minute)
            states = [
                (AlertConfirmation.CONFIRMED, BisectionState.FOUND),
                (AlertConfirmation.REFUTED, None),
                (AlertConfirmation.HELD, BisectionState.GAVE_UP),
                (AlertConfirmation.NOT_NEEDED, None),  # made a legacy "confirmed" row below
            ]
            alerts = [
                Alert(
                    case=case,
                    hardware_kind=kind,
                    metric=Metric.DENOISE_STEP_MS,
                    direction=Direction.REGRESSION,
                    first_bad_commit=commits[index],
                    before_value=100.0,
                    after_value=110.0,
                    change_pct=10.0,
                    threshold_pct=2.0,
                    confirmation=confirmation,
                    bisection_state=bisection,
                    evidence={},
                )
                for index, (confirmation, bisection) in enumerate(states)
            ]
            session.add_all(alerts)
            session.flush()
            # Rows that reference the rebuilt tables (alerts, jobs) must come through untouched.
            for alert in alerts:
                record(alert, reason="raised", now=t0, opening=True)
                alert.bisection_steps.append(
                    BisectionStep(position=0, commit=commits[0], outcome="bad", job_id=job.id, created_at=t0)
                )
            # The kinds 0014 knows: 0026 (0027) refuses to go below itself while a check (culprit)
            # row is stored.
            later = (OutboxKind.CHECK, OutboxKind.CULPRIT)
            for outbox_kind in [kind for kind in OutboxKind if kind not in later]:
                outbox.queue(session=session, kind=outbox_kind, repository="o/r", target=7)
            session.flush()
            return {
                "histories": {
                    owner.id: [
                        {
                            "attempt": attempt.number,
                            "runner": attempt.runner_name,
                            "outcome": attempt.outcome.value,
                            "reason": attempt.reason,
                            "at": attempt.ended_at.isoformat(),
                        }
                        for attempt in owner.attempt_history
                    ]
                    for owner in (job, done)
                },
                "alerts": {alert.id: (alert.confirmation.value, alert.bisection_state) for alert in alerts},
                "legacy_alert": alerts[-1].id,
                "references": _references(session.connection()),
            }
    finally:
        engine.dispose()


def _references(connection: Connection) -> list[tuple[Any, ...]]:
    events = connection.execute(text("SELECT id, alert_id, reason FROM alert_events ORDER BY id")).all()
    steps = connection.execute(text("SELECT id, alert_id, job_id FROM bisection_steps ORDER BY id")).all()
    return [tuple(row) for row in [*events, *steps]]


def test_0014_states_become_enums_and_attempts_rows_both_ways(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    made = _states_and_attempts(scratch_db_url)
    histories = made["histories"]
    assert [entry["outcome"] for entry in next(iter(histories.values()))] == [
        "released",
        "lease expired",
        "failed",
    ]
    engine = db.make_engine(scratch_db_url)
    try:
        db.downgrade(scratch_db_url, "0013")
        with engine.begin() as connection:
            stored = {
                job_id: value if isinstance(value, list) else json.loads(value)
                for job_id, value in connection.execute(text("SELECT id, attempt_history FROM jobs"))
            }
            assert stored == histories  # the JSON lists the jobs kept before 0014
            confirmed = dict(connection.execute(text("SELECT id, confirmed FROM alerts")).all())
            assert {key: bool(value) for key, value in confirmed.items()} == {
                alert_id: confirmation in ("confirmed", "held")
                for alert_id, (confirmation, _) in made["alerts"].items()
            }
            assert _references(connection) == made["references"]
            kinds = connection.execute(text("SELECT kind FROM github_outbox ORDER BY id")).scalars().all()
            assert kinds == ["comment", "reply", "reaction", "status"]
            # An alert from before confirmations were recorded: confirmed, and "not_needed".
            connection.execute(
                text("UPDATE alerts SET confirmed = :yes WHERE id = :id"),
                {"yes": True, "id": made["legacy_alert"]},
            )

        db.upgrade(scratch_db_url)
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT job_id, number, runners.name, outcome, reason, started_at FROM job_attempts "
                    "LEFT JOIN runners ON runners.id = job_attempts.runner_id ORDER BY job_id, number"
                )
            ).all()
            assert [
                (job_id, number, runner, outcome, reason)
                for job_id, number, runner, outcome, reason, _ in rows
            ] == [
                (job_id, entry["attempt"], entry["runner"], entry["outcome"], entry["reason"])
                for job_id, entries in sorted(histories.items())
                for entry in entries
            ]
            assert {started for *_, started in rows} == {None}  # the JSON never said when attempts started
            assert _references(connection) == made["references"]
            states = {
                alert_id: (confirmation, bisection)
                for alert_id, confirmation, bisection in connection.execute(
                    text("SELECT id, confirmation, bisection_state FROM alerts")
                )
            }
        expected = dict(made["alerts"])
        expected[made["legacy_alert"]] = ("confirmed", None)
        assert states == expected
        # Ended times survive both ways, to the microsecond.
        with db.session_scope(db.make_session_factory(engine)) as session:
            ended = [
                attempt.ended_at.isoformat()
                for attempt in session.scalars(
                    select(JobAttempt).order_by(JobAttempt.job_id, JobAttempt.number)
                )
            ]
        assert ended == [entry["at"] for _, entries in sorted(histories.items()) for entry in entries]

        # A value outside its enum stops the upgrade, leaving the database as it was.
        db.downgrade(scratch_db_url, "0013")
        with engine.begin() as connection:
            connection.execute(
                text("UPDATE alerts SET bisection_state = 'bisecting' WHERE id = :id"),
                {"id": made["legacy_alert"]},
            )
        with pytest.raises(RuntimeError, match="bisecting"):
            db.upgrade(scratch_db_url)
        assert db.current_revision(engine) == "0013"
    finally:
        engine.dispose()


def test_0020_evidence_runs_linked_before_count_as_read(scratch_db_url: str) -> None:
    """Before 0020 an upload read its evidence run at once: a linked row is read (at its
    ``recorded_at``), a row still waiting for its run is not."""
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
        linked = pending_row(engine)
        with db.session_scope(sessions) as session:
            waiting = enqueue_job(
                session=session,
                candidate=candidate(session, "bbbbbbb"),
                case=session.scalars(select(Case).where(Case.slug == "qwen-image-t2i-1024")).one(),
                hardware=session.scalars(select(HardwareKind).where(HardwareKind.name == "H200")).one(),
                reason=JobReason.EVIDENCE,
            ).job
            session.add(EvidenceJob(job_id=waiting.id, side=Arm.BASE))
            waiting_id = waiting.id
        db.downgrade(scratch_db_url, "0019")
        db.upgrade(scratch_db_url)
        with db.session_scope(sessions) as session:
            rows = {row.job_id: row for row in session.scalars(select(EvidenceJob))}
            assert rows[linked].recorded_at is not None
            assert rows[linked].summarized_at == rows[linked].recorded_at
            assert rows[waiting_id].summarized_at is None
            assert rows[waiting_id].run_id is None
    finally:
        engine.dispose()
