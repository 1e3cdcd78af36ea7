"""A fake GitHub REST API: a small FastAPI app holding state and recording calls.

It answers what the bot asks (pulls, compare, collaborators' permission, issue comments,
reactions, statuses, check runs (for an App only, as GitHub), App installation tokens, who the bot
is) in GitHub's full shapes (:mod:`~perftrack.fakegithub.shapes`). The test suite serves it
in-process and holds every exchange to GitHub's published description (tests/fakes/fake_github.py,
tests/fakes/github_contract.py); ``perftrack demo`` serves it over HTTP on localhost, so the demo's
tracker talks to it as to GitHub. Nothing in the service imports it.
"""

from perftrack.fakegithub.state import Call, FakeGithub, PlannedFailure

__all__ = ["Call", "FakeGithub", "PlannedFailure"]
