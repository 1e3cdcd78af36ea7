"""Suite path globs that match no file of a tree: the pure check, the tree listing and the command.

The CLI test lives here because tests/ has no folder for ``perftrack/cli`` of its own beside
tests/perftrack/test_cli.py; it needs no database.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perftrack.cli import app
from tests.conftest import SHIPPED_SUITES
from tracker.catalog.path_coverage import (
    CaseCoverage,
    CaseGlobs,
    DeadGlob,
    DeadReason,
    SuiteCoverage,
    SuiteGlobs,
    TreeUnavailable,
    check_coverage,
    read_suite_globs,
    suite_globs,
    tree_files,
)
from tracker.catalog.paths import path_spec
from tracker.catalog.suites import load_suites

GEN = "python/sglang/multimodal_gen"
FILES = [
    f"{GEN}/runtime/layers/attention.py",
    f"{GEN}/runtime/server_args/__init__.py",
    f"{GEN}/runtime/models/dits/zimage.py",
    f"{GEN}/runtime/models/dits/qwen_image.py",
    f"{GEN}/runtime/pipelines/qwen_image.py",
    "sgl-kernel/csrc/norm.cu",
    "sgl-kernel/README.md",
    "docs/index.md",
]


def suite_text(defaults: list[str], cases: dict[str, list[str]]) -> str:
    """A valid suite whose defaults and cases have these ``paths``."""
    text = f"""
[suite]
name = "diffusion"
[repository]
name = "sglang"
url = "https://github.com/sgl-project/sglang.git"
[hardware.H200]
[defaults]
paths = {defaults!r}
"""
    for slug, globs in cases.items():
        text += f"""
[[cases]]
slug = "{slug}"
model = "org/{slug}"
family = "{slug}"
task = "t2i"
hardware = ["H200"]
paths = {globs!r}
[cases.params]
prompt = "a fox"
num-inference-steps = 4
seed = 42
"""
    return text


PLANTED = suite_text(
    defaults=[
        f"{GEN}/runtime/layers/**",
        f"{GEN}/runtime/server_args.py",  # dead: now a package
        f"{GEN}/runtime/server_args/**",
        "sgl-kernel/**",
    ],
    cases={
        "qwen-image": [f"{GEN}/**/qwen_image*.py", f"{GEN}/**/qwenimage*.py"],  # the second is dead
        "z-image": [f"{GEN}/**/z_image*.py", f"{GEN}/**/zimage*.py", "!*.md"],  # z_image dead, !*.md too
        "kernels": ["sgl-kernel/", "!*.md"],  # the README is taken back (and re-added by the defaults)
    },
)


def test_dead_globs_are_named_with_their_suite_and_owner_and_each_case_counts_its_files() -> None:
    report = check_coverage([suite_globs(PLANTED)], FILES)
    assert report.dead == (
        DeadGlob("diffusion", "defaults", f"{GEN}/runtime/server_args.py", DeadReason.MATCHES_NOTHING),
        DeadGlob("diffusion", "qwen-image", f"{GEN}/**/qwenimage*.py", DeadReason.MATCHES_NOTHING),
        DeadGlob("diffusion", "z-image", f"{GEN}/**/z_image*.py", DeadReason.MATCHES_NOTHING),
        DeadGlob("diffusion", "z-image", "!*.md", DeadReason.EXCLUDES_NOTHING),
    )
    assert report.suites == (
        SuiteCoverage(
            suite="diffusion",
            defaults_files=4,
            cases=(
                CaseCoverage("qwen-image", own_files=2, files=6),
                CaseCoverage("z-image", own_files=1, files=5),
                CaseCoverage("kernels", own_files=1, files=4),
            ),
        ),
    )
    assert report.files_listed == len(FILES)
    assert not report.ok
    assert report.dead[0].describe() == (
        f"diffusion / defaults: `{GEN}/runtime/server_args.py` matches no file"
    )


def test_a_suite_whose_globs_all_match_is_ok() -> None:
    text = suite_text(defaults=["sgl-kernel/**"], cases={"qwen-image": [f"{GEN}/**/qwen_image*.py"]})
    report = check_coverage([suite_globs(text)], FILES)
    assert report.ok
    assert report.dead == ()


def test_a_taken_back_glob_of_the_defaults_is_alive_when_it_excludes_in_one_case() -> None:
    suite = SuiteGlobs(
        name="diffusion",
        path="<suite>",
        defaults=("sgl-kernel/**", "!*.cu", "!*.txt"),
        cases=(
            CaseGlobs("docs", ("docs/", "sgl-kernel/**", "!*.cu", "!*.txt")),
            CaseGlobs("models", (f"{GEN}/**", "sgl-kernel/**", "!*.cu", "!*.txt")),
        ),
    )
    report = check_coverage([suite], FILES)
    assert report.dead == (DeadGlob("diffusion", "defaults", "!*.txt", DeadReason.EXCLUDES_NOTHING),)
    assert report.suites[0].defaults_files == 1  # the README; norm.cu is taken back


def test_a_glob_pathspec_refuses_is_invalid_and_its_case_cannot_be_counted() -> None:
    suite = SuiteGlobs(
        name="diffusion",
        path="<suite>",
        defaults=(),
        cases=(CaseGlobs("broken", ("docs/**", "!", "# a comment")),),
    )
    report = check_coverage([suite], FILES)
    assert [(dead.owner, dead.glob, dead.reason) for dead in report.dead] == [
        ("broken", "!", DeadReason.INVALID),
        ("broken", "# a comment", DeadReason.INVALID),
    ]
    assert report.dead[0].detail  # pathspec's own words
    assert report.dead[1].detail == "a blank line or a comment, not a glob"
    assert report.suites[0].cases == (CaseCoverage("broken", own_files=None, files=None),)


def test_shipped_suites_load_and_every_glob_is_one_glob_pathspec_accepts() -> None:
    """The product's suites: each case's globs compile together, and each is a glob, not a comment."""
    assert load_suites(SHIPPED_SUITES)
    for path in sorted(SHIPPED_SUITES.glob("*.toml")):
        suite = read_suite_globs(path)
        for case in suite.cases:
            assert case.globs, case.slug
            assert len(path_spec(case.globs).patterns) == len(case.globs)
            for glob in case.globs:
                assert [pattern.include for pattern in path_spec((glob,)).patterns] in ([True], [False]), glob


# --- listing a tree's files -----------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Jonas Weber",
        "GIT_AUTHOR_EMAIL": "jonas@example.invalid",
        "GIT_COMMITTER_NAME": "Jonas Weber",
        "GIT_COMMITTER_EMAIL": "jonas@example.invalid",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def make_tree(root: Path, files: list[str]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git work tree holding FILES (committed) and one untracked build output."""
    repo = make_tree(tmp_path / "sglang", FILES)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "sglang")
    (repo / "build").mkdir()
    (repo / "build" / "zimage_kernel.py").write_text("untracked\n")
    return repo


def test_a_work_tree_lists_what_git_tracks(checkout: Path) -> None:
    assert tree_files(checkout) == sorted(FILES)


def test_a_bare_repository_and_a_git_dir_list_the_head_tree(checkout: Path, tmp_path: Path) -> None:
    bare = tmp_path / "sglang.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(checkout), str(bare))
    assert tree_files(bare) == sorted(FILES)
    assert tree_files(checkout / ".git") == sorted(FILES)


def test_a_plain_folder_is_walked_without_git_folders(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "wheel", ["python/sglang/a.py", "python/sglang/sub/b.py", "vendor/.git/config"]
    )
    assert tree_files(tree) == ["python/sglang/a.py", "python/sglang/sub/b.py"]


def test_what_is_not_a_directory_cannot_be_listed(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    for root in (tmp_path / "file", tmp_path / "missing"):
        with pytest.raises(TreeUnavailable, match="is not a directory"):
            tree_files(root)


def test_a_broken_repository_says_what_git_said(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "objects").mkdir(parents=True)
    (broken / "HEAD").write_text("not a ref\n")
    with pytest.raises(TreeUnavailable, match=r"git ls-tree HEAD in .* failed: "):
        tree_files(broken)


# --- perftrack suites check --sglang-repo ---------------------------------------------------------

runner = CliRunner()


def test_the_command_reports_dead_globs_and_exits_1_0_or_2(checkout: Path, tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "diffusion.toml").write_text(PLANTED)

    dead = runner.invoke(app, ["suites", "check", "--dir", str(suites), "--sglang-repo", str(checkout)])
    assert dead.exit_code == 1, dead.output
    lines = dead.output.splitlines()
    assert f"{checkout}: {len(FILES)} files" in lines
    assert "suite diffusion: defaults select 4 files" in lines
    assert "  qwen-image: 2 files by its own globs, 6 with the defaults" in lines
    assert [line for line in lines if line.startswith("✗")] == [
        f"✗ diffusion / defaults: `{GEN}/runtime/server_args.py` matches no file",
        f"✗ diffusion / qwen-image: `{GEN}/**/qwenimage*.py` matches no file",
        f"✗ diffusion / z-image: `{GEN}/**/z_image*.py` matches no file",
        "✗ diffusion / z-image: `!*.md` excludes no file the globs before it select",
    ]
    assert lines[-1] == "4 glob(s) select nothing"

    (suites / "diffusion.toml").write_text(
        suite_text(defaults=["sgl-kernel/**"], cases={"z-image": [f"{GEN}/**/zimage*.py"]})
    )
    alive = runner.invoke(app, ["suites", "check", "--dir", str(suites), "--sglang-repo", str(checkout)])
    assert alive.exit_code == 0, alive.output
    assert alive.output.splitlines()[-1] == "✓ every glob selects a file"

    missing = runner.invoke(
        app, ["suites", "check", "--dir", str(suites), "--sglang-repo", str(tmp_path / "nowhere")]
    )
    assert missing.exit_code == 2
    assert f"--sglang-repo: {tmp_path / 'nowhere'} is not a directory" in missing.output.replace("\n", "")
