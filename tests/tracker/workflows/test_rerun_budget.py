"""The re-runs of a flagged run are bounded by time, not by tries: a re-run flagged again is queued
again while the budget since the first flagged try lasts, and a machine that is never quiet ends at
the budget whatever the pace of its tries. The clock is the ``now`` each upload is stored at."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from sqlalchemy.orm import Session

from tests.tracker.workflows.test_reruns import BURNER, CLEAN, LIMITS, T0, nightly, queued, run_next
from tracker.enums import JobReason, JobState
from tracker.ingest.results import IngestLimits
from tracker.settings import Settings
from tracker.workflows.reruns import FlaggedTries, flagged_tries


def test_a_re_run_flagged_again_is_queued_again_until_a_clean_run_counts(session: Session) -> None:
    original = nightly(session)
    flagged = []
    for minute in (1, 2, 3):
        job, run = run_next(session, BURNER, now=T0 + dt.timedelta(minutes=minute))
        flagged.append((job, run))
        [rerun] = queued(session)
        assert run.rerun_job_id == rerun.id
        assert (rerun.reason, rerun.candidate_id, rerun.case_id) == (
            JobReason.NIGHTLY,
            original.candidate_id,
            original.case_id,
        )
    assert flagged[0][0].id == original.id
    tries = flagged_tries(session=session, job=flagged[-1][0], now=T0 + dt.timedelta(minutes=3))
    assert tries == FlaggedTries(count=3, first_flagged_at=T0 + dt.timedelta(minutes=1))
    assert tries.describe(T0 + dt.timedelta(minutes=3), dt.timedelta(minutes=15)) == (
        "try 3, 120 s of the 900 s budget spent"
    )
    job, run = run_next(session, CLEAN, value=31.0, now=T0 + dt.timedelta(minutes=4))
    assert run.measurement_flag is None
    assert run.excluded_reason is None
    assert job.state is JobState.DONE
    assert queued(session) == []
    # Every flagged try stays stored, excluded with the flag's own reason (none was given up on).
    assert all(run.excluded_reason and "tries" not in run.excluded_reason for _, run in flagged)


@pytest.mark.parametrize(("pace_s", "tries"), [(10, 91), (100, 10), (1000, 2)])
def test_a_machine_that_is_never_quiet_ends_at_the_budget_whatever_the_pace(
    session: Session, pace_s: int, tries: int
) -> None:
    nightly(session)
    now = T0
    runs = []
    for _ in range(1000):  # far more tries than any budget here allows: the loop must end by itself
        if not queued(session):
            break
        now += dt.timedelta(seconds=pace_s)
        runs.append(run_next(session, BURNER, now=now)[1])
    assert not queued(session)
    assert len(runs) == tries
    # The last try began once 900 s had passed since the first one, and no sooner.
    spent = (len(runs) - 1) * pace_s
    assert 900 <= spent < 900 + pace_s
    assert runs[-1].excluded_reason is not None
    assert runs[-1].excluded_reason.endswith(f"flagged on all {tries} tries in {spent} s (budget 900 s)")
    assert all(run.rerun_job_id is not None for run in runs[:-1])
    assert runs[-1].rerun_job_id is None


def test_the_budget_is_a_setting_and_zero_measures_a_flagged_run_once(session: Session) -> None:
    assert IngestLimits.from_settings(Settings(flagged_rerun_budget_s=120)).rerun_budget_s == 120
    assert IngestLimits.from_settings(Settings()).rerun_budget_s == 900
    nightly(session)
    never_again = dataclasses.replace(LIMITS, rerun_budget_s=0)
    _, run = run_next(session, BURNER, limits=never_again)
    assert queued(session) == []
    assert run.rerun_job_id is None
    assert run.excluded_reason is not None
    assert run.excluded_reason.endswith("; flagged on its one try in 0 s (budget 0 s)")


def test_a_short_budget_from_the_limits_ends_sooner(session: Session) -> None:
    nightly(session)
    short = dataclasses.replace(LIMITS, rerun_budget_s=120)
    minutes = 0
    while queued(session):
        minutes += 1
        run_next(session, BURNER, now=T0 + dt.timedelta(minutes=minutes), limits=short)
        assert minutes < 10
    assert minutes == 3  # at 1 (first), 2 (60 s spent) and 3 (120 s: the budget is spent)
