"""The two toy fixes as carried patches: an old base carries both, a base that already has one
fix carries only the other, and the build says which (real git, the real toy repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.candidates import CandidateBuilder
from runners.jobspec import CandidateSpec, CarriedPatch, RepositorySpec
from runners.toy import ChangeKind, ToyPullRequest, ToyRepository, create_toy_repository

pytestmark = pytest.mark.slow  # builds the real toy repository with git


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> ToyRepository:
    return create_toy_repository(tmp_path_factory.mktemp("toy-carried") / "repo")


def fixes(toy: ToyRepository) -> list[ToyPullRequest]:
    """The two fixes (#103, a change of its own, is not carried here)."""
    return sorted((pr for pr in toy.pull_requests if pr.fixes_sha is not None), key=lambda pr: pr.number)


def carried(toy: ToyRepository) -> tuple[CarriedPatch, ...]:
    return tuple(CarriedPatch(ref=pr.ref, reason=pr.title) for pr in fixes(toy))


def test_carried_fixes_follow_what_the_base_has(toy: ToyRepository, tmp_path: Path) -> None:
    builder = CandidateBuilder(tmp_path / "work")
    repository = RepositorySpec(name="toydit", url=str(toy.path), default_branch=toy.default_branch)
    first, second = fixes(toy)
    shas = [commit.sha for commit in toy.commits]
    # A base before either fix landed: both fixes are stacked (the reset is harmless without hooks).
    neither = shas[min(shas.index(first.landed_sha), shas.index(second.landed_sha)) - 1]
    with builder.build(repository, CandidateSpec(base_sha=neither, carried=carried(toy))) as built:
        assert built.patches_applied == (first.ref, second.ref)
        assert built.patches_already_in == ()
        assert "custom_op" in (built.path / "toydit" / "kernels.py").read_text()
        assert "_dynamo.reset()" in (built.path / "toydit" / "offload.py").read_text()
    # A base where the first fix has landed (as its own commit on main): only the second is stacked.
    one_landed = shas[shas.index(first.landed_sha)]
    assert shas.index(second.landed_sha) > shas.index(one_landed)
    with builder.build(repository, CandidateSpec(base_sha=one_landed, carried=carried(toy))) as built:
        assert built.patches_already_in == (first.ref,)
        assert built.patches_applied == (second.ref,)
    # HEAD has both fixes: nothing is stacked, and the tree is main's own.
    with builder.build(repository, CandidateSpec(base_sha=toy.head_sha, carried=carried(toy))) as built:
        assert built.patches_applied == ()
        assert built.patches_already_in == (first.ref, second.ref)
        assert built.head_sha == toy.head_sha
    assert [commit.kind for commit in toy.commits].count(ChangeKind.FIX) == 2
