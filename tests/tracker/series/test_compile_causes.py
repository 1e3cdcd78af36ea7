"""Compile counters as evidence for detection: where a series' compile counters moved."""

from __future__ import annotations

from tracker.enums import RunSource
from tracker.models import Commit
from tracker.series.state import CompileCounters, SeriesCommit, SeriesRun, compile_changes

NONE: CompileCounters = (None, None, None, None)


def commit(*counters: CompileCounters) -> SeriesCommit:
    runs = [
        SeriesRun(run_id=index, value=1.0, source=RunSource.JOB, runner_id=None, job_id=None, compile=counted)
        for index, counted in enumerate(counters)
    ]
    return SeriesCommit(commit=Commit(sha="0" * 40), runs=runs)


def test_a_commit_whose_runs_agree_on_other_counters_is_a_cause() -> None:
    series = [
        commit((0, 1, 1, 0)),
        commit((0, 1, 1, 0), (0, 1, 1, 0)),
        commit((3, 4, 6, 0)),  # graph breaks appeared
        commit((3, 4, 6, 0)),
        commit((3, 4, 6, 1)),  # a recompile
    ]
    assert compile_changes(series) == {2, 4}


def test_unknown_or_disagreeing_counters_say_nothing() -> None:
    series = [
        commit((0, 1, 1, 0)),
        commit(NONE),  # a log without counters
        commit((3, 4, 6, 0)),
        commit((3, 4, 6, 0), (4, 5, 7, 0)),  # its runs disagree
        commit((4, 5, 7, 0)),
    ]
    assert compile_changes(series) == set()
    assert compile_changes([]) == set()
