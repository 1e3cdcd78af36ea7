"""The demo's database before the first job: the toy's history as a tracker following its branch
knows it, the tokens of the runner and of the admin, and an A/A calibration per toy case."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from perftrack.demo.runner import HARDWARE
from runners.gitmeta import commit_info
from runners.toy import SUITE_TEMPLATE, ToyPullRequest, ToyRepository
from tracker.access.tokens import create_token
from tracker.catalog.cases import list_current_cases
from tracker.comparisons.creation import create_calibration
from tracker.detection.confirmation import POLICY as CONFIRMATION_POLICY
from tracker.enums import TokenRole
from tracker.models import Case, Commit, Repository
from tracker.vcs.commits import ensure_candidate, upsert_commit
from wire import CommitIn

# From three rounds on, one slow process cannot set the noise; one more than the degrees of
# freedom a confirmation takes from the noise prior at most (ConfirmationPolicy.max_prior_dof, 4:
# five rounds) gives the prior its whole weight, and each suspect's interval is narrower from its
# first rounds: a few more calibration jobs, fewer rounds per suspect (docs/demo.md, "Where the
# time goes").
CALIBRATION_ROUNDS = max(3, CONFIRMATION_POLICY.max_prior_dof + 1)


def seed(session: Session, toy: ToyRepository) -> tuple[str, str]:
    """Store the toy's history and queue an A/A calibration per case; returns the runner token's
    secret and an admin token's (the receiver's subscriptions are created with it)."""
    token = create_token(session=session, name="demo-runner", role=TokenRole.RUNNER).secret
    admin = create_token(session=session, name="demo-admin", role=TokenRole.ADMIN).secret
    cases = toy_cases(session)
    commits = store_history(session, toy, cases[0].repository)
    for case in cases:
        create_calibration(
            session=session,
            candidate=ensure_candidate(session=session, base=commits[0], patches=[]),
            cases=[case.slug],
            hardware=[HARDWARE],
            rounds=CALIBRATION_ROUNDS,
            requests_per_round=1,
            requested_by="demo",
            command="A/A calibration",
        )
    return token, admin


def toy_cases(session: Session) -> list[Case]:
    """The suite's current toy cases (every one has the toy repository)."""
    cases = [case for case in list_current_cases(session=session) if case.workload.value == "toy"]
    if not cases or cases[0].repository is None:
        raise RuntimeError(f"the toy suite {SUITE_TEMPLATE} defines no toy case with a repository")
    return cases


def store_history(session: Session, toy: ToyRepository, repository: Repository | None) -> list[Commit]:
    """Every main commit with its metadata, as a tracker that follows the branch knows them."""
    assert repository is not None
    stored = []
    for commit in toy.commits:
        info = commit_info(toy.path, commit.sha)
        stored.append(
            upsert_commit(
                session=session,
                repository=repository,
                commit=CommitIn(
                    sha=commit.sha,
                    committed_at=dt.datetime.fromisoformat(info.committed_at)
                    if info and info.committed_at
                    else None,
                    title=commit.title,
                    author_name=info.author_name if info else "",
                    author_email=info.author_email if info else "",
                    branch="main",
                    parents=info.parents if info else [],
                ),
            )
        )
    return stored


def fixes(toy: ToyRepository) -> list[ToyPullRequest]:
    """The open pull requests that fix a regression on main (#101, #102)."""
    return [pr for pr in toy.pull_requests if pr.fixes_sha is not None]


def changes(toy: ToyRepository) -> list[ToyPullRequest]:
    """The open pull requests that are changes of their own (#103: faster, and the picture changes)."""
    return [pr for pr in toy.pull_requests if pr.fixes_sha is None]


def flags_on(case: Case) -> list[str]:
    """The flags a case passes (``false`` leaves a flag out)."""
    return [name for name, value in (case.flags or {}).items() if value not in (False, None, "false")]
