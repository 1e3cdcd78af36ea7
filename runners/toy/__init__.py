"""The embedded toy workload's repository: a toy DiT pipeline whose git history holds both incidents.

``create_toy_repository(path)`` writes it; the pipeline itself (``python -m toydit generate``) lives
only inside that repository, never in perftrack's import graph.
"""

from __future__ import annotations

from runners.toy.history import ChangeKind
from runners.toy.repo import (
    ToyCommit,
    ToyPullRequest,
    ToyRepository,
    ToyRepositoryError,
    create_toy_repository,
)

__all__ = [
    "ChangeKind",
    "ToyCommit",
    "ToyPullRequest",
    "ToyRepository",
    "ToyRepositoryError",
    "create_toy_repository",
]
