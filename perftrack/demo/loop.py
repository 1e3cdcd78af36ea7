"""The demo's part of the loop with people: what a deployment's scheduler and GitHub would do.

- each night is kept as the scheduler keeps a fired nightly schedule (:func:`queue_night`: a
  ``nightly_runs`` row per night, so each night's summary is told), on the commit the night's
  script names instead of the branch's head;
- after each phase the outboxes are sent as the scheduler's periodic tasks send them
  (:meth:`Outboxes.send`): nightly summaries queued, notifications POSTed to the receiver, GitHub's
  outbox (culprit comments, ``/perf`` comments, statuses, check runs) sent to the fake GitHub;
- the receiver's two subscriptions are created through the tracker's API (:func:`subscribe`);
- a ``/perf`` comparison is found once the bot made it (:func:`wait_for_comparison`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from perftrack.demo.receiver import JSON_PATH, SLACK_PATH
from runners.http import TrackerHttp
from tracker import db
from tracker.catalog.suites import ResolvedSchedule
from tracker.enums import JobReason
from tracker.github.client import GithubClient, client_from_settings
from tracker.github.outbox import flush_outbox
from tracker.models import Case, Commit, Comparison, HardwareKind, NightlyRun, utcnow
from tracker.notifications.outbox import flush_notifications
from tracker.queue.jobs import enqueue_job
from tracker.scheduling.nightly_notices import notify_finished_nightlies
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate

COMPARISON_WAIT_S = 60.0


def demo_schedule(*, suite: str, repository: str, hardware: str) -> ResolvedSchedule:
    """The nightly schedule the demo fires by hand, night by night."""
    return ResolvedSchedule(
        name="demo-nightly",
        suite=suite,
        repository=repository,
        cron="0 2 * * *",
        timezone="UTC",
        branch="main",
        hardware=[hardware],
        backfill_limit=0,
    )


def queue_night(session: Session, schedule: ResolvedSchedule, cases: Sequence[Case], sha: str) -> NightlyRun:
    """Queue the night's nightly jobs of ``sha`` in every toy case, kept as a ``nightly_runs`` row of
    ``schedule`` as the scheduler keeps a fired night (its summary is told once its jobs end).

    Unlike :func:`tracker.scheduling.nightly.fire_nightly`, a commit the A/A calibration measured is
    measured again: the demo's first night is the calibration's commit, and its nightly runs are
    the series' first points.
    """
    kind = session.scalar(select(HardwareKind).where(HardwareKind.name.in_(schedule.hardware)))
    commit = session.scalar(select(Commit).where(Commit.sha == sha))
    assert kind is not None
    assert commit is not None
    candidate = ensure_candidate(session=session, base=commit, patches=[])
    for case in cases:
        enqueue_job(session=session, candidate=candidate, case=case, hardware=kind, reason=JobReason.NIGHTLY)
    night = NightlyRun(
        schedule=schedule.name,
        fired_at=utcnow(),
        repository_id=commit.repository_id,
        branch=schedule.branch,
        commit_sha=commit.sha,
        jobs_queued=len(cases),
        jobs_existing=0,
        backfilled=[],
        details={
            "suite": schedule.suite,
            "hardware": list(schedule.hardware),
            "series": [f"{case.slug}@{kind.name}" for case in cases],
        },
    )
    session.add(night)
    session.flush()
    return night


@dataclass
class Outboxes:
    """Sends what the tracker queued for the outside world, as the scheduler's periodic tasks do."""

    sessions: sessionmaker[Session]
    settings: Settings

    def __post_init__(self) -> None:
        self._github: GithubClient | None = client_from_settings(self.settings)

    def send(self) -> None:
        """Queue the summaries of ended nightlies, then send notifications and GitHub's outbox."""
        with db.session_scope(self.sessions) as session:
            notify_finished_nightlies(session=session, now=utcnow())
        with db.session_scope(self.sessions) as session:
            flush_notifications(session=session, public_url=self.settings.public_url)
        if self._github is not None:
            with db.session_scope(self.sessions) as session:
                flush_outbox(session=session, settings=self.settings, client=self._github)


def subscribe(tracker_url: str, admin_token: str, receiver_url: str, secret: str) -> None:
    """The receiver's two subscriptions, to every event: Slack-compatible and signed generic JSON."""
    with TrackerHttp.connect(tracker_url, admin_token) as tracker:
        for name, path, kind in (("demo-slack", SLACK_PATH, "slack"), ("demo-json", JSON_PATH, "json")):
            body: dict[str, object] = {"name": name, "url": receiver_url + path, "format": kind}
            if kind == "json":
                body["secret"] = secret
            tracker.json("POST", "/notifications/subscriptions", json=body)


def wait_for_comparison(sessions: sessionmaker[Session], pr_number: int, after: int) -> int:
    """The id of the first comparison of pull request ``pr_number`` newer than ``after``, once the bot
    has carried out the delivery (after its answer)."""
    deadline = time.monotonic() + COMPARISON_WAIT_S
    while time.monotonic() < deadline:
        with sessions() as session:
            found = session.scalar(
                select(Comparison.id)
                .where(Comparison.pr_number == pr_number, Comparison.id > after)
                .order_by(Comparison.id)
            )
        if found is not None:
            return found
        time.sleep(0.2)
    raise RuntimeError(f"the bot made no comparison for #{pr_number} within {COMPARISON_WAIT_S:.0f} s")


def newest_comparison(sessions: sessionmaker[Session]) -> int:
    """The newest comparison's id (0: none)."""
    with sessions() as session:
        return session.scalar(select(Comparison.id).order_by(Comparison.id.desc()).limit(1)) or 0


__all__ = [
    "Outboxes",
    "demo_schedule",
    "newest_comparison",
    "queue_night",
    "subscribe",
    "wait_for_comparison",
]
