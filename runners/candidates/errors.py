"""The one error the candidate builder raises."""

from __future__ import annotations


class CandidateBuildError(Exception):
    """The candidate could not be built: unknown ref, conflicting patch, failed git call or build."""
