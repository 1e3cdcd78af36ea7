"""The summary of one night, as its page and its ``nightly.summary`` notification both tell it:
what ran, what changed, what is still open and what got fixed."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.detection.test_alerts import BASE_MS, commit_in, sha
from tests.tracker.notifications.test_events import regression
from tracker.detection.triage import triage_alert
from tracker.models import Alert, Commit, NightlyRun
from tracker.notifications.events import NightlyFacts, nightly_notice
from tracker.scheduling.summary import NightSummary, night_summary, nightly_run_view

FIRED = dt.datetime(2026, 6, 1, 2, tzinfo=dt.UTC)


def night(session: Session, fired_at: dt.datetime, commit: Commit | None = None) -> NightlyRun:
    """A nightly of schedule ``nightly`` that measured ``commit`` (none: it measured nothing)."""
    run = NightlyRun(
        schedule="nightly",
        fired_at=fired_at,
        branch="main",
        repository_id=commit.repository_id if commit else None,
        commit_sha=commit.sha if commit else None,
        backfilled=[],
    )
    session.add(run)
    session.flush()
    return run


def summary_of(session: Session, run: NightlyRun) -> NightSummary:
    return night_summary(session=session, view=nightly_run_view(session=session, run=run))


def commit_of(session: Session, index: int) -> Commit:
    return session.scalars(select(Commit).where(Commit.sha == sha(index))).one()


def test_a_night_with_a_confirmed_regression_tells_what_ran_and_what_changed(session: Session) -> None:
    alert = regression(session)
    run = night(session, alert.created_at - dt.timedelta(minutes=1), commit_of(session, 7))
    summary = summary_of(session, run)
    assert summary.view.measured == [("qwen-image-t2i-1024", "H200")]
    assert summary.view.jobs_by_state == {"done": 1}
    assert summary.view.alerts == [alert]
    assert summary.open_alerts == 1
    assert summary.fixed == []
    facts = summary.facts()
    [line] = facts.changed
    assert line.startswith(f"alert {alert.id}: regression +")
    assert line.endswith("% on qwen-image-t2i-1024 / H200")
    lines = nightly_notice(session=session, run=run, facts=facts).lines
    assert lines[:3] == (f"ran: {sha(7)[:10]} on main: 1 done", "changed: 1", f"• {line}")
    assert lines[3:] == ("still open: 1", "fixed: 0")


def test_an_alert_fixed_since_the_night_before_is_told_fixed_and_no_longer_open(session: Session) -> None:
    alert = regression(session)
    night(session, FIRED)
    triage_alert(
        session=session, alert_id=alert.id, status="fixed", actor="ada", reason="reverted", now=FIRED
    )
    later = night(session, FIRED + dt.timedelta(days=1))
    summary = summary_of(session, later)
    assert summary.fixed == [alert]
    assert summary.open_alerts == 0
    assert summary.facts().fixed[0].startswith(f"alert {alert.id}: regression +")
    third = night(session, FIRED + dt.timedelta(days=2))
    assert summary_of(session, third).fixed == []  # fixed before the night before: told once


def test_a_failed_job_is_listed_with_its_reason(session: Session) -> None:
    bench = Bench(session)
    bench.nightly(commit_in(0))
    bench.drain(lambda commit, job: "OOM on step 3")
    run = night(session, FIRED, commit_of(session, 0))
    summary = summary_of(session, run)
    [failed] = summary.view.failed_jobs
    assert (failed.case_slug, failed.hardware, failed.reason) == (
        "qwen-image-t2i-1024",
        "H200",
        "OOM on step 3",
    )
    assert summary.view.jobs_by_state == {"failed": 1}
    assert summary.facts().failed == 1
    assert not summary.view.ok


def test_an_empty_night_says_nothing_ran_changed_or_got_fixed(session: Session) -> None:
    bench = Bench(session)
    bench.nightly(commit_in(0))
    bench.drain(lambda commit, job: BASE_MS)  # measured before the night: not this night's
    run = night(session, FIRED)
    summary = summary_of(session, run)
    assert summary.view.measured == []
    assert summary.view.ok
    assert summary.facts() == NightlyFacts(jobs_by_state={}, failed=0, changed=[], open_alerts=0, fixed=[])
    assert session.scalars(select(Alert)).all() == []
