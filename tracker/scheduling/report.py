"""Nightly summaries on a tracking issue: once every job of a nightly has ended (or the nightly could
not start), one comment on the configured issue says what ran, what failed and what changed.

The comment goes through the GitHub outbox (``reply`` on the issue), so it is retried until GitHub
takes it; ``nightly_runs.reported_at`` makes each nightly reported once, whichever process leads.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import AlertState, JobState, OutboxKind
from tracker.github import outbox
from tracker.models import Alert, NightlyRun
from tracker.scheduling.summary import NightlyRunView, nightly_run_view
from tracker.settings import TrackingIssue
from tracker.views.alert_display import AlertDisplay

REPORT_WINDOW = dt.timedelta(
    days=3
)  # older nightlies (e.g. before the issue was configured) are not reported
_OPEN_STATES = frozenset({JobState.QUEUED.value, JobState.LEASED.value})
_FAILED_SHOWN = 20
_ALERTS_SHOWN = 20


def report_finished_nightlies(
    *, session: Session, issue: TrackingIssue, now: dt.datetime, public_url: str | None = None
) -> list[int]:
    """Queue one comment per nightly that ended since the last call; the ids of the nightlies reported."""
    candidates = session.scalars(
        select(NightlyRun)
        .where(NightlyRun.reported_at.is_(None), NightlyRun.fired_at >= now - REPORT_WINDOW)
        .order_by(NightlyRun.fired_at, NightlyRun.id)
        .with_for_update(skip_locked=True)
    ).all()
    reported = []
    for run in candidates:
        view = nightly_run_view(session=session, run=run)
        if run.error is None and (not view.jobs_by_state or _OPEN_STATES & view.jobs_by_state.keys()):
            continue  # still measuring (or its jobs are not visible yet)
        outbox.queue(
            session=session,
            kind=OutboxKind.REPLY,
            repository=issue.repository,
            target=issue.number,
            payload={"body": render_nightly(view, public_url=public_url)},
        )
        run.reported_at = now
        reported.append(run.id)
    session.flush()
    return reported


def render_nightly(view: NightlyRunView, *, public_url: str | None) -> str:
    """The issue comment of one nightly, in GitHub markdown."""
    run = view.run
    base = (public_url or "").rstrip("/")
    when = (run.scheduled_for or run.fired_at).strftime("%Y-%m-%d %H:%M UTC")
    if run.error is not None:
        lines = [f"### Nightly `{_code(run.schedule)}` for {when}: did not run", "", _text(run.error)]
    else:
        sha = (run.commit_sha or "")[:10]
        verdict = "all measured" if view.ok else f"{len(view.failed_jobs)} failed"
        lines = [
            f"### Nightly `{_code(run.schedule)}` for {when}: {verdict}",
            "",
            f"- Commit: `{sha}` {_text(view.commit_title)} on `{_code(run.branch)}`",
            "- Jobs: " + ", ".join(f"{count} {state}" for state, count in sorted(view.jobs_by_state.items())),
        ]
        if run.backfilled:
            lines.append(f"- Backfilled: {len(run.backfilled)} earlier commit(s)")
        for failed in view.failed_jobs[:_FAILED_SHOWN]:
            lines.append(
                f"- Failed: `{_code(failed.case_slug)}` on {_code(failed.hardware)}: {_text(failed.reason)[:200]}"
            )
        if len(view.failed_jobs) > _FAILED_SHOWN:
            lines.append(f"- … and {len(view.failed_jobs) - _FAILED_SHOWN} more failed jobs")
    if view.alerts:
        lines += ["", "**Changes found since this nightly:**", ""]
        for alert in view.alerts[:_ALERTS_SHOWN]:
            link = f" ([alert {alert.id}]({base}/alerts/{alert.id}))" if base else f" (alert {alert.id})"
            lines.append(_alert_line(alert, view.displays[alert.id], link))
            lines += [
                f"  - why: {_text(finding.summary)}" for finding in view.diagnoses.get(alert.id, [])[:1]
            ]
    elif run.error is None:
        lines += ["", "No change found since this nightly."]
    if base:
        lines += ["", f"[All nightlies]({base}/nightly)"]
    return "\n".join(lines) + "\n"


def _alert_line(alert: Alert, display: AlertDisplay, link: str) -> str:
    """``- regression +8.42 % [+7.90, +8.95] % in 4 paired rounds on `case` / H200 (alert 3): open``;
    a suspect is never open, and its paired rounds' reading follows its state."""
    figure = display.reason if display.is_output else f"{alert.direction.value} {display.text}"
    line = (
        f"- {_text(figure)} on `{_code(alert.case.slug)}` / {_code(alert.hardware_kind.name)}{link}: "
        f"{display.state.value}"
    )
    if display.state in (AlertState.CONFIRMING, AlertState.UNCONFIRMED) and display.reason:
        line += f" ({_text(display.reason)})"
    return line


def _code(text: str) -> str:
    """Text to sit inside backticks: no backticks, no line breaks."""
    return text.replace("`", "'").replace("\n", " ").replace("\r", " ")


def _text(text: str) -> str:
    """Plain text that cannot open HTML, links, mentions or a new markdown block."""
    flat = " ".join(text.split())
    for char in ("\\", "<", ">", "[", "]", "*", "_", "|", "`", "#"):
        flat = flat.replace(char, "\\" + char)
    return flat.replace("@", "@\u200b")  # no notifications from commit titles
