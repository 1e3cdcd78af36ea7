"""The pull request a commit merged, read from its title as GitHub writes squash and merge commits."""

from __future__ import annotations

import pytest

from tracker.vcs.pulls import pull_number_in


@pytest.mark.parametrize(
    ("title", "number"),
    [
        ("Use a fused LayerNorm kernel in the DiT blocks (#87)", 87),
        ("Offload DiT layers while the compile warmup runs (#94)  ", 94),
        ("Merge pull request #43601 from someone/branch", 43601),
        ("Release 0.2.0", None),
        ("Fix (#12) typo", None),  # only at the end, where GitHub's squash puts it
        ("Merge branch 'main' into #12", None),
    ],
)
def test_a_title_names_the_pull_request_it_merged(title: str, number: int | None) -> None:
    assert pull_number_in(title) == number
