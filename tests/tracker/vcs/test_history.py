"""Git calls never read a user-controlled argument as an option (a repository URL starting with "-")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracker.models import Repository
from tracker.vcs.history import GitHistory, HistoryUnavailable


def test_a_url_starting_with_a_dash_is_a_url_not_an_option(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = Repository(name="hostile", url=f"--upload-pack=touch {marker};")
    history = GitHistory(tmp_path / "mirrors", timeout_s=30)
    with pytest.raises(HistoryUnavailable) as refused:
        history.first_parent_range(hostile, "a" * 40, "b" * 40)
    # git took the whole string for the repository to clone, and ran nothing.
    assert f"repository '--upload-pack=touch {marker};' does not exist" in str(refused.value)
    assert not marker.exists()
