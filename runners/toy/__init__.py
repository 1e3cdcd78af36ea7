"""The embedded toy workload's repository: a toy DiT pipeline whose git history holds both incidents.

``create_toy_repository(path)`` writes it; the pipeline itself (``python -m toydit generate``) lives
only inside that repository, never in perftrack's import graph.
"""

from __future__ import annotations

from pathlib import Path

from runners.toy.history import ChangeKind
from runners.toy.repo import (
    ToyCommit,
    ToyPullRequest,
    ToyRepository,
    ToyRepositoryError,
    create_toy_repository,
)

# The suite measuring the toy repository; ``{toy_repo}`` stands for where it was written.
SUITE_TEMPLATE = Path(__file__).resolve().parent / "toy-suite.toml"

__all__ = [
    "SUITE_TEMPLATE",
    "ChangeKind",
    "ToyCommit",
    "ToyPullRequest",
    "ToyRepository",
    "ToyRepositoryError",
    "create_toy_repository",
]
