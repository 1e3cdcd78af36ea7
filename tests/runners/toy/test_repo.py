"""The toy repository: its scripted history, deterministic shas, pull-request branches and fixes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runners.toy import ChangeKind, ToyPullRequest, ToyRepository, ToyRepositoryError, create_toy_repository
from runners.toy.history import MAIN, PULL_REQUESTS
from runners.workloads.cli.options import parse_help
from tracker.catalog.suites import parse_suite

SUITE = Path(__file__).resolve().parents[3] / "runners" / "toy" / "toy-suite.toml"


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return result.stdout.strip()


def patch_id(repo: Path, sha: str) -> str:
    show = subprocess.run(["git", "-C", str(repo), "show", sha], capture_output=True, check=True).stdout
    result = subprocess.run(
        ["git", "-C", str(repo), "patch-id", "--stable"], input=show, capture_output=True, check=True
    )
    return result.stdout.decode().split()[0]


def fixing(toy: ToyRepository) -> list[ToyPullRequest]:
    """The pull requests that fix a regression on main (#101, #102)."""
    return [p for p in toy.pull_requests if p.fixes_sha is not None]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> ToyRepository:
    return create_toy_repository(tmp_path_factory.mktemp("toy") / "repo")


def test_main_holds_the_scripted_history(toy: ToyRepository) -> None:
    shas = git(toy.path, "rev-list", "--reverse", "main").split()
    assert shas == [c.sha for c in toy.commits]
    assert len(shas) == len(MAIN) >= 12
    titles = git(toy.path, "log", "--reverse", "--format=%s", "main").splitlines()
    assert titles == [c.title for c in toy.commits]
    kinds = [c.kind for c in toy.commits]
    assert kinds[0] is ChangeKind.BASELINE
    assert kinds.count(ChangeKind.REGRESSION) == 2
    assert kinds.count(ChangeKind.FIX) == 2
    assert kinds.count(ChangeKind.SPEEDUP) == 2
    assert kinds.count(ChangeKind.NEUTRAL) >= 6
    for incident in (1, 2):
        regression, fix = (c for c in toy.commits if c.incident == incident)
        assert (regression.kind, fix.kind) == (ChangeKind.REGRESSION, ChangeKind.FIX)
        assert toy.commits.index(regression) < toy.commits.index(fix)
    assert toy.commit("04-fused-layernorm").incident == 1
    assert "offload-during-compile" in toy.commit("10-offload-during-compile").needs_flags


def test_both_regressions_are_on_main_before_either_fix_lands(toy: ToyRepository) -> None:
    # A pull-request comparison based on the commit before the first fix lands sees both
    # regressions in its base: #101 then improves the compile case, #101 and #102 the offload case.
    position = {c.sha: index for index, c in enumerate(toy.commits)}
    regressions = [position[c.sha] for c in toy.commits if c.kind is ChangeKind.REGRESSION]
    fixes = [position[c.sha] for c in toy.commits if c.kind is ChangeKind.FIX]
    assert max(regressions) < min(fixes)
    assert [toy.commits[i].source for i in fixes] == ["12-custom-op-layernorm", "13-dynamo-reset"]
    base = toy.commits[min(fixes) - 1]
    assert base.source == "11-digest-log-line"
    for pull_request in fixing(toy):
        assert position[pull_request.base_sha] < position[base.sha]


def test_source_directories_sort_in_history_order() -> None:
    sources = [step.source for step in MAIN]
    assert sources == sorted(sources)
    assert len(set(sources)) == len(sources)


def test_checkout_is_main_and_clean(toy: ToyRepository) -> None:
    assert git(toy.path, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(toy.path, "rev-parse", "HEAD") == toy.head_sha
    assert git(toy.path, "status", "--porcelain") == ""
    assert (toy.path / "toydit" / "__main__.py").is_file()


def test_incidents_are_in_the_code(toy: ToyRepository) -> None:
    def source(commit: str, path: str) -> str:
        return git(toy.path, "show", f"{toy.commit(commit).sha}:{path}")

    assert "@torch._dynamo.disable" in source("04-fused-layernorm", "toydit/kernels.py")
    fixed = source("12-custom-op-layernorm", "toydit/kernels.py")
    assert "torch.library.custom_op" in fixed
    assert "register_fake" in fixed
    assert "enable_offload(pipeline.transformer.blocks)" in source(
        "10-offload-during-compile", "toydit/generate.py"
    )
    assert "@torch.compiler.disable" in source("10-offload-during-compile", "toydit/offload.py")
    assert "torch._dynamo.reset()" in source("13-dynamo-reset", "toydit/offload.py")
    assert "torch._dynamo.reset()" not in source("12-custom-op-layernorm", "toydit/offload.py")
    assert "@torch._dynamo.disable" in source("11-digest-log-line", "toydit/kernels.py")


def test_shas_are_the_same_everywhere(toy: ToyRepository, tmp_path: Path) -> None:
    again = create_toy_repository(tmp_path / "elsewhere")
    assert [c.sha for c in again.commits] == [c.sha for c in toy.commits]
    assert [p.head_sha for p in again.pull_requests] == [p.head_sha for p in toy.pull_requests]


def test_existing_repository_is_reused(toy: ToyRepository) -> None:
    marker = toy.path / ".git" / "perftrack-toy.json"
    written = marker.stat().st_mtime_ns
    assert create_toy_repository(toy.path) == toy
    assert marker.stat().st_mtime_ns == written


def test_other_directories_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ToyRepositoryError, match="not a toy repository"):
        create_toy_repository(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert create_toy_repository(empty).path == empty


def test_outdated_repository_is_rebuilt_only_when_asked(tmp_path: Path) -> None:
    built = create_toy_repository(tmp_path / "repo")
    marker = built.path / ".git" / "perftrack-toy.json"
    document = json.loads(marker.read_text())
    marker.write_text(json.dumps({**document, "fingerprint": "from older sources"}))
    with pytest.raises(ToyRepositoryError, match="other sources"):
        create_toy_repository(built.path)
    assert create_toy_repository(built.path, replace_outdated=True) == built


def test_moved_branch_is_reported(tmp_path: Path) -> None:
    built = create_toy_repository(tmp_path / "repo")
    git(built.path, "update-ref", "refs/heads/main", built.commits[-2].sha)
    with pytest.raises(ToyRepositoryError, match="refs/heads/main"):
        create_toy_repository(built.path)


def test_pull_requests_branch_off_right_after_their_regression(toy: ToyRepository) -> None:
    assert [p.number for p in toy.pull_requests] == [spec.number for spec in PULL_REQUESTS] == [101, 102, 103]
    assert [p.number for p in fixing(toy)] == [101, 102]
    for pull_request in fixing(toy):
        assert git(toy.path, "rev-parse", pull_request.branch) == pull_request.head_sha
        assert git(toy.path, "rev-parse", pull_request.ref) == pull_request.head_sha
        assert git(toy.path, "rev-parse", f"{pull_request.head_sha}^") == pull_request.base_sha
        assert pull_request.base_sha == pull_request.fixes_sha
        regression = toy.commit(pull_request.fixes_sha)
        landed = toy.commit(pull_request.landed_sha)
        assert (regression.kind, landed.kind) == (ChangeKind.REGRESSION, ChangeKind.FIX)
        assert regression.incident == landed.incident
        assert toy.commits.index(regression) < toy.commits.index(landed) - 1  # lands later, not next
        assert landed.title == f"{pull_request.title} (#{pull_request.number})"


def test_fix_patch_ids_match_between_pull_request_and_main(toy: ToyRepository) -> None:
    for pull_request in toy.pull_requests:
        assert patch_id(toy.path, pull_request.head_sha) == patch_id(toy.path, pull_request.landed_sha)
    assert patch_id(toy.path, toy.pull_requests[0].head_sha) != patch_id(
        toy.path, toy.pull_requests[1].head_sha
    )


def cherry_pick(toy: ToyRepository, workdir: Path, base: str, sha: str) -> str | None:
    """Tree after cherry-picking ``sha`` onto ``base`` in a scratch worktree; ``None`` on a conflict."""
    tree = workdir / f"pick-{base[:7]}-{sha[:7]}"
    git(toy.path, "worktree", "add", "--quiet", "--detach", str(tree), base)
    try:
        picked = subprocess.run(
            ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "cherry-pick", sha],
            capture_output=True,
            check=False,
        )
        return git(tree, "rev-parse", "HEAD^{tree}") if picked.returncode == 0 else None
    finally:
        subprocess.run(["git", "-C", str(tree), "cherry-pick", "--abort"], capture_output=True, check=False)
        git(toy.path, "worktree", "remove", "--force", str(tree))


def test_fixes_stack_onto_older_bases(toy: ToyRepository, tmp_path: Path) -> None:
    custom_op, reset = fixing(toy)
    # Cherry-picked onto the commit before it landed, each fix gives exactly main's tree.
    before_landing = toy.commits[toy.commits.index(toy.commit(custom_op.landed_sha)) - 1]
    landed_tree = git(toy.path, "rev-parse", f"{custom_op.landed_sha}^{{tree}}")
    assert cherry_pick(toy, tmp_path, before_landing.sha, custom_op.head_sha) == landed_tree
    before_landing = toy.commits[toy.commits.index(toy.commit(reset.landed_sha)) - 1]
    landed_tree = git(toy.path, "rev-parse", f"{reset.landed_sha}^{{tree}}")
    assert cherry_pick(toy, tmp_path, before_landing.sha, reset.head_sha) == landed_tree
    # The reset fix only touches offload.py, unchanged since the first commit: it applies anywhere
    # (and does nothing where no hooks are removed). The custom-op fix needs the kernel it fixes.
    assert cherry_pick(toy, tmp_path, toy.commits[0].sha, reset.head_sha) is not None
    assert cherry_pick(toy, tmp_path, toy.commits[0].sha, custom_op.head_sha) is None


def test_toy_suite_loads_with_the_repository_path(toy: ToyRepository) -> None:
    text = SUITE.read_text(encoding="utf-8")
    assert "{toy_repo}" in text
    suite = parse_suite(text.replace("{toy_repo}", str(toy.path)), str(SUITE))
    assert suite.repository.url == str(toy.path)
    assert {case.workload for case in suite.cases} == {"toy"}
    assert {tuple(case.hardware) for case in suite.cases} == {("cpu",)}
    flags = {case.slug: case.flags for case in suite.cases}
    assert flags["toy-dit-t2i-256"] == {"enable-torch-compile": True, "warmup": True, "save-output": True}
    assert flags["toy-dit-t2i-256-offload-compile"]["offload-during-compile"] is True
    assert all(case.threshold_pct == 2.0 for case in suite.cases)


def test_the_output_changing_speed_up_lands_last_from_its_own_pull_request(toy: ToyRepository) -> None:
    changed = [c for c in toy.commits if c.changes_output]
    assert [c.source for c in changed] == ["15-merge-image-tokens"]
    (commit,) = changed
    assert commit.kind is ChangeKind.SPEEDUP
    assert commit == toy.commits[-1]
    merge = toy.pull_request(103)
    assert merge.fixes_sha is None
    assert merge.base_sha == toy.commit("14-release-0.2.0").sha
    assert merge.landed_sha == commit.sha
    assert merge.commits[0].changes_output
    assert git(toy.path, "rev-parse", f"{merge.head_sha}^{{tree}}") == git(
        toy.path, "rev-parse", f"{commit.sha}^{{tree}}"
    )
    assert "repeat_interleave" in git(toy.path, "show", f"{commit.sha}:toydit/dit.py")


def test_the_release_commit_renames_warmup_as_sglang_0_5_18_did(toy: ToyRepository, tmp_path: Path) -> None:
    """Before release 0.2.0 the toy takes --warmup, from it on --warmup-mode: the demo's nightly
    backfills and bisections cross the change, and the runner spells each commit's own flags."""

    def options(source: str) -> set[str]:
        tree = tmp_path / source
        subprocess.run(
            [
                "git",
                "-C",
                str(toy.path),
                "worktree",
                "add",
                "--quiet",
                "--detach",
                str(tree),
                toy.commit(source).sha,
            ],
            check=True,
        )
        help_text = subprocess.run(
            [sys.executable, "-m", "toydit", "generate", "--help"],
            cwd=tree,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return set(parse_help(help_text).options)

    before, after = options("13-dynamo-reset"), options("14-release-0.2.0")
    assert "--warmup" in before
    assert "--warmup-mode" not in before
    assert "--warmup-mode" in after
    assert "--warmup" not in after
    assert before - {"--warmup"} == after - {"--warmup-mode"}
    assert toy.commit("14-release-0.2.0").kind is ChangeKind.NEUTRAL
