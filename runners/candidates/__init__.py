"""The candidate builder: a base commit plus patches, checked out from a local mirror and built.

``CandidateBuilder(workdir).build(repository, candidate)`` is a context manager: it fetches the
repository's mirror, adds a detached worktree at the base, applies the carried patches the base does
not already contain and then the candidate's patches, runs the repository's build command unless the
same tree was the last one built at the same path, yields a ``BuiltCandidate`` and removes the
worktree when the with-block ends. Every failure is a ``CandidateBuildError`` with a message meant
for the job's failure reason.

Modules: ``builder`` (worktree lifecycle), ``_mirror`` (clone and fetch), ``_patches`` (cherry-picks
and patch-ids), ``_build`` (build command and its reuse), ``_git``/``_process`` (plumbing); the
workdir's locks are ``filelock`` flocks (``_mirror.workdir_lock``).
"""

from runners.candidates.builder import BuiltCandidate, CandidateBuilder
from runners.candidates.errors import CandidateBuildError

__all__ = ["BuiltCandidate", "CandidateBuildError", "CandidateBuilder"]
