"""Who completes an abbreviated commit: the repository (git, branch heads), never an upload."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.tracker.bench import Bench
from tests.tracker.detection.test_bisection import CULPRIT, repository, run_bisection  # noqa: F401
from tracker.models import Commit, Repository
from tracker.vcs.commits import record_commit
from wire import CommitIn

SHORT = "669a9bd"
CLAIMED = SHORT + "0" * 33
REAL = SHORT + "3c1e0f2a4b5d6c7e8f90a1b2c3d4e5f6a"


def test_the_repository_completes_an_abbreviated_commit_and_an_upload_does_not(session: Session) -> None:
    stored_in = Repository(name="abbrev", url="https://example.invalid/abbrev.git")
    session.add(stored_in)
    session.flush()
    short = record_commit(session=session, repository=stored_in, commit=CommitIn(sha=SHORT)).commit
    from_upload = record_commit(session=session, repository=stored_in, commit=CommitIn(sha=CLAIMED))
    assert (from_upload.commit.id, from_upload.commit.sha) == (short.id, SHORT)
    assert [line.split(":")[1].split()[0] for line in from_upload.disagreements] == ["sha"]
    from_git = record_commit(
        session=session, repository=stored_in, commit=CommitIn(sha=REAL), from_repository=True
    )
    assert (from_git.commit.id, from_git.commit.sha, from_git.disagreements) == (short.id, REAL, ())
    again = record_commit(session=session, repository=stored_in, commit=CommitIn(sha=SHORT)).commit
    assert again.id == short.id


def test_bisection_completes_a_commit_an_import_stored_abbreviated(
    session: Session,
    repository: tuple[Path, list[CommitIn]],  # noqa: F811
    tmp_path: Path,
) -> None:
    """The commits bisection lists from git are the repository's word: they complete an abbreviated
    row instead of adding a second commit beside it."""
    _, commits = repository
    culprit = commits[CULPRIT].sha
    bench_repository = Bench(session).case.repository
    assert bench_repository is not None
    short = record_commit(session=session, repository=bench_repository, commit=CommitIn(sha=culprit[:7]))
    alert, _ = run_bisection(session, repository, tmp_path, broken=set())
    assert alert.culprit_commit is not None
    assert (alert.culprit_commit.id, alert.culprit_commit.sha) == (short.commit.id, culprit)
    assert session.scalars(select(Commit.sha).where(Commit.sha.startswith(culprit[:7]))).all() == [culprit]
