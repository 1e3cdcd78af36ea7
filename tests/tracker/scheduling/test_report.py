"""Nightly summaries on a tracking issue: one comment per nightly once its jobs ended, escaped."""

from __future__ import annotations

import datetime as dt

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import regression_payloads
from tests.tracker.views.alert_rows import CASE, T0, output_alert, unconfirmed_suspect
from tests.web.api.test_nightly import EARLIER, _resolver, _schedule
from tracker.enums import JobState
from tracker.models import GithubOutbox, Job, NightlyRun
from tracker.scheduling.nightly import fire_nightly
from tracker.scheduling.report import TrackingIssue, render_nightly, report_finished_nightlies
from tracker.scheduling.summary import nightly_run_view
from tracker.settings import Settings

pytestmark = pytest.mark.dialect

ISSUE = TrackingIssue(repository="sgl-project/sglang", number=12345)
LATER = EARLIER + dt.timedelta(hours=3)


def replies(session: Session) -> list[GithubOutbox]:
    return list(
        session.scalars(select(GithubOutbox).where(GithubOutbox.kind == "reply").order_by(GithubOutbox.id))
    )


def test_a_nightly_is_reported_once_when_its_jobs_end(
    client: TestClient, session: Session, runner_token: str
) -> None:
    run = fire_nightly(
        session=session, schedule=_schedule("sglang-nightly"), now=EARLIER, history=None, resolver=_resolver
    )
    broken = fire_nightly(
        session=session,
        schedule=_schedule("release-nightly", branch="gone"),
        now=EARLIER,
        history=None,
        resolver=_resolver,
    )
    session.commit()
    for body in regression_payloads(
        title_override="Fuse <img src=x onerror=alert(1)> @everyone [x](javascript:1)"
    ):
        assert (
            client.post(
                "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
            ).status_code
            == 201
        )

    # The nightly that could not start is reported at once; the one still measuring is not.
    assert report_finished_nightlies(
        session=session, issue=ISSUE, now=LATER, public_url="https://perf.example"
    ) == [broken.id]
    [first] = replies(session)
    assert (first.repository, first.target) == ("sgl-project/sglang", "12345")
    assert "did not run" in first.payload["body"]
    assert "\\<script\\>" in first.payload["body"]  # the error's text cannot open HTML

    jobs = list(session.scalars(select(Job).order_by(Job.id)))
    jobs[0].state = JobState.FAILED
    jobs[0].failure_reason = "OOM <b>on</b> step 3 | `rm -rf`"
    for job in jobs[1:-1]:
        job.state = JobState.DONE
    session.flush()
    assert report_finished_nightlies(session=session, issue=ISSUE, now=LATER) == []  # one job still queued
    jobs[-1].state = JobState.DONE
    session.flush()
    assert report_finished_nightlies(
        session=session, issue=ISSUE, now=LATER, public_url="https://perf.example"
    ) == [run.id]
    assert report_finished_nightlies(session=session, issue=ISSUE, now=LATER + dt.timedelta(hours=1)) == []
    body = replies(session)[-1].payload["body"]
    assert "### Nightly `sglang-nightly` for 2026-01-01 18:00 UTC: 1 failed" in body
    assert "- Jobs: 6 done, 1 failed" in body
    assert "OOM \\<b\\>on\\</b\\> step 3 \\| \\`rm -rf\\`" in body
    # An import cannot be paired: detection's estimate, said to be one; the state as the alert reads.
    assert "- regression +9.1 % (detection's estimate) on `qwen-image-t2i-1024` / H200 ([alert" in body
    assert "): fixed" in body
    assert "https://perf.example/alerts/" in body
    assert "[All nightlies](https://perf.example/nightly)" in body
    session.refresh(run)
    assert run.reported_at == LATER


def test_old_nightlies_are_not_reported(session: Session) -> None:
    fire_nightly(
        session=session,
        schedule=_schedule("release-nightly", branch="gone"),
        now=EARLIER,
        history=None,
        resolver=_resolver,
    )
    assert report_finished_nightlies(session=session, issue=ISSUE, now=EARLIER + dt.timedelta(days=4)) == []
    assert session.scalars(select(NightlyRun.reported_at)).all() == [None]


@pytest.mark.parametrize("bad", ["sglang#1", "sgl-project/sglang", "sgl-project/sglang#0", "a/b#x", "a/b #1"])
def test_the_tracking_issue_setting_is_checked_at_start_up(bad: str) -> None:
    with pytest.raises(ValidationError, match="owner/name#NUMBER"):
        Settings(github_nightly_issue=bad)
    assert (
        Settings(github_nightly_issue="sgl-project/sglang#12345").github_nightly_issue
        == "sgl-project/sglang#12345"
    )
    assert TrackingIssue.parse(" sgl-project/sglang#7 ") == TrackingIssue("sgl-project/sglang", 7)


def test_the_comment_shows_what_paired_rounds_measured_and_output_changes_in_db(session: Session) -> None:
    run = NightlyRun(schedule="sglang-nightly", fired_at=T0, branch="main", backfilled=[])
    session.add(run)
    session.flush()
    suspect = unconfirmed_suspect(session, 4)
    output = output_alert(session, 6)
    lines = render_nightly(nightly_run_view(session=session, run=run), public_url=None).splitlines()
    [said] = [line for line in lines if f"(alert {suspect.id})" in line]
    assert said.startswith(
        f"- improvement -1.37 % \\[-2.30, -0.45\\] % in 16 paired rounds on `{CASE}` / H200 (alert {suspect.id}): "
        "unconfirmed (unconfirmed, too noisy"
    )
    assert "3.6" not in said  # detection's first estimate is not what the rounds measured
    [changed] = [line for line in lines if f"(alert {output.id})" in line]
    assert changed.startswith("- output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB) on ")
    assert changed.endswith(": open")
    assert " ms" not in changed
