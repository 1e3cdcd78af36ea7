"""Work a request leaves for after its answer: bisections whose range must be listed from git, and
evidence runs whose trace must be read.

A request never runs git inside its transaction (a clone can take minutes; on SQLite the write
transaction holds the database's one write lock). The workflow leaves such a bisection
``queued``; after the answer is sent, :func:`tracker.workflows.bisections.start_queued` lists the
range with no session open and starts it. Nor does it parse a profiler trace (several MB,
gzipped): an upload only links an evidence run, and
:func:`tracker.workflows.evidence_reading.summarize_pending` reads it after the answer. The
scheduler (or a scheduler-less server's housekeeping) does the same for whatever is left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated

from fastapi import BackgroundTasks, Depends

from tracker.vcs.history import GitHistory
from tracker.workflows.bisections import start_queued
from tracker.workflows.evidence_reading import summarize_pending
from web.deps import HistoryDep, get_state
from web.state import AppState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FollowUps:
    """What a handler may leave for after its answer."""

    background: BackgroundTasks
    state: AppState
    history: GitHistory

    def start_bisections(self) -> None:
        """After the answer: list the queued bisections' ranges from git and start them."""
        self.background.add_task(_start_bisections, self.state, self.history)

    def summarize_evidence(self) -> None:
        """After the answer: read the evidence runs uploads linked (their log and trace) for the
        diagnosis; one indexed query when none is waiting."""
        self.background.add_task(_summarize_evidence, self.state)


def _start_bisections(state: AppState, history: GitHistory) -> None:
    try:
        start_queued(sessions=state.sessions, history=history, clock=state.clock)
    except Exception:  # after the answer nobody hears it; the scheduler tries again
        logger.exception("starting queued bisections after the answer failed")


def _summarize_evidence(state: AppState) -> None:
    try:
        summarize_pending(
            sessions=state.sessions,
            read_sessions=state.read_sessions,
            clock=state.clock,
            telling=state.settings.culprit_telling(),
        )
    except Exception:  # after the answer nobody hears it; the scheduler tries again
        logger.exception("reading evidence runs after the answer failed")


async def get_follow_ups(
    background: BackgroundTasks, state: Annotated[AppState, Depends(get_state)], history: HistoryDep
) -> FollowUps:
    """The request's follow-ups."""
    return FollowUps(background=background, state=state, history=history)


FollowUpsDep = Annotated[FollowUps, Depends(get_follow_ups)]
