"""The one handler maps each branch of the tracker's error tree to its status code."""

from __future__ import annotations

import pytest

from tracker.errors import Conflict, NotFound, PerftrackError
from tracker.github.client import GithubError, GithubSetupError
from tracker.github.commands import CommandError
from tracker.vcs.branch_head import BranchUnavailable
from tracker.vcs.history import HistoryUnavailable
from web.errors import status_for


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (CommandError("`on` needs hardware kinds"), 422),
        (NotFound("no outbox row 9"), 404),
        (Conflict("outbox row 9 was sent already"), 409),
        (GithubError("GET /x: 404 Not Found", status=404), 502),  # GitHub's 404 is not ours
        (GithubSetupError("the GitHub App is not installed on o/r", status=404), 502),
        (HistoryUnavailable("commit abc is not in https://example.invalid/r.git"), 502),
        (BranchUnavailable("branch 'gone' not found in https://example.invalid/r.git"), 502),
    ],
)
def test_status_for_each_branch(error: PerftrackError, status: int) -> None:
    assert status_for(error) == status
