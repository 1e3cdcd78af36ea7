"""The candidate builder against real git: an upstream repository in tmp_path, a mirror, worktrees."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from filelock import UnixFileLock

from runners.candidates import BuiltCandidate, CandidateBuilder, CandidateBuildError
from runners.jobspec import CandidateSpec, CarriedPatch, RepositorySpec

ROOT = Path(__file__).resolve().parents[3]
PIPELINE = "toydit/pipeline.py"
PIPELINE_TEXT = "steps = 20\nreset_dynamo = False\noffload = True\n"


class Upstream:
    """A small repository standing in for GitHub: branches act as PRs, ``refs/pull/N/head`` via update-ref."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()
        self.git("init", "--quiet", "-b", "main")

    def git(self, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Upstream Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Upstream Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
        }
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env, check=True
        )
        return result.stdout.strip()

    def commit(self, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)
        self.git("add", "-A")
        self.git("commit", "--quiet", "-m", message)
        return self.git("rev-parse", "HEAD")

    def checkout(self, branch: str, start: str | None = None) -> None:
        self.git("checkout", "--quiet", *(["-B", branch, start] if start else [branch]))

    def pull_request(self, number: int, sha: str) -> str:
        ref = f"refs/pull/{number}/head"
        self.git("update-ref", ref, sha)
        return ref

    def cherry_pick(self, sha: str) -> str:
        self.git("cherry-pick", sha)
        return self.git("rev-parse", "HEAD")

    def tree(self, sha: str) -> str:
        return self.git("rev-parse", f"{sha}^{{tree}}")


def set_line(text: str, key: str, value: str) -> str:
    return "".join(
        f"{key} = {value}\n" if line.startswith(f"{key} =") else line + "\n" for line in text.splitlines()
    )


@pytest.fixture(autouse=True)
def no_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The builder must work on a host with no git identity or config at all."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    """main: c0 (20 steps) → c1 (30 steps)."""
    repo = Upstream(tmp_path / "upstream")
    repo.commit("Add toy pipeline", {PIPELINE: PIPELINE_TEXT, "README.md": "toy\n"})
    repo.commit("Use 30 steps", {PIPELINE: set_line(PIPELINE_TEXT, "steps", "30")})
    return repo


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def repository(upstream: Upstream) -> RepositorySpec:
    return RepositorySpec(name="toy", url=str(upstream.path))


def sha_of(upstream: Upstream, rev: str) -> str:
    return upstream.git("rev-parse", rev)


def read(built: BuiltCandidate, name: str = PIPELINE) -> str:
    return (built.path / name).read_text()


def worktree_git(built: BuiltCandidate, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(built.path), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def registered_worktrees(workdir: Path) -> list[str]:
    """Worktrees the mirror knows of, besides the bare mirror itself."""
    if not (workdir / "mirrors" / "toy.git").exists():
        return []  # refused before the mirror was made
    listing = subprocess.run(
        ["git", "-C", str(workdir / "mirrors" / "toy.git"), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in listing.splitlines() if line.startswith("worktree ")][1:]


def leftovers(workdir: Path) -> list[Path]:
    """Anything left under the repository's worktree directory (slots and their lock files)."""
    repo_dir = workdir / "worktrees" / "toy"
    return sorted(repo_dir.iterdir()) if repo_dir.exists() else []


def assert_cleaned_up(workdir: Path) -> None:
    assert leftovers(workdir) == []
    assert registered_worktrees(workdir) == []


# --- plain candidates and patches ---------------------------------------------------------------


def test_plain_candidate_is_the_base_checked_out(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c0 = sha_of(upstream, "main~1")
    builder = CandidateBuilder(workdir)
    with builder.build(repository, CandidateSpec(base_sha=c0)) as built:
        assert built.path.is_relative_to(workdir.resolve() / "worktrees" / "toy")
        assert read(built) == PIPELINE_TEXT
        assert (built.base_sha, built.head_sha, built.tree_sha) == (c0, c0, upstream.tree(c0))
        assert worktree_git(built, "rev-parse", "HEAD^{tree}") == upstream.tree(c0)
        assert (built.patches_applied, built.patches_already_in, built.build_reused) == ((), (), False)
        path = built.path
    assert not path.exists()
    assert_cleaned_up(workdir)
    assert (workdir / "mirrors" / "toy.git" / "HEAD").is_file()
    assert (workdir / "mirrors" / "toy.lock").is_file()


def test_short_sha_and_branch_name_resolve(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c1 = sha_of(upstream, "main")
    builder = CandidateBuilder(workdir)
    for base in (c1[:10], "main"):
        with builder.build(repository, CandidateSpec(base_sha=base)) as built:
            assert built.base_sha == c1


def test_stacked_patches_apply_in_order_and_reproducibly(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c1 = sha_of(upstream, "main")
    upstream.checkout("order", c1)
    first = upstream.commit("Write first", {"order.txt": "first\n"})
    second = upstream.commit("Write second", {"order.txt": "first\nsecond\n"})
    upstream.checkout("main")
    builder = CandidateBuilder(workdir)
    candidate = CandidateSpec(base_sha=c1, patches=(first, second))
    with builder.build(repository, candidate) as built:
        assert read(built, "order.txt") == "first\nsecond\n"
        assert worktree_git(built, "log", "--format=%s", f"{c1}..HEAD").splitlines() == [
            "Write second",
            "Write first",
        ]
        assert f"(cherry picked from commit {first})" in worktree_git(
            built, "log", "-1", "--format=%b", "HEAD~1"
        )
        committers = worktree_git(built, "log", "--format=%an|%cn <%ce>", f"{c1}..HEAD").splitlines()
        assert committers == ["Upstream Dev|perftrack <perftrack@localhost>"] * 2
        assert built.patches_applied == (first, second)
        assert built.applied_shas == (first, second)
        assert built.base_sha == c1
        assert built.head_sha != c1
        first_head = built.head_sha
        assert built.tree_sha == upstream.tree(second)
    # Same candidate, same commits: the committer date is the base's, so the head sha repeats.
    with builder.build(repository, candidate) as again:
        assert again.head_sha == first_head

    # The other order cannot apply: the second patch edits a file only the first one creates.
    with (
        pytest.raises(CandidateBuildError, match=rf"patch {second} \({second[:7]} 'Write second'\)"),
        builder.build(repository, CandidateSpec(base_sha=c1, patches=(second, first))),
    ):
        pass


def test_pull_request_ref_is_fetched_each_job(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c1 = sha_of(upstream, "main")
    upstream.checkout("reset-dynamo", c1)
    fix = upstream.commit(
        "Reset dynamo after offload", {PIPELINE: set_line(upstream_text(upstream), "reset_dynamo", "True")}
    )
    upstream.checkout("main")
    upstream.git("branch", "-D", "reset-dynamo")  # only the PR ref keeps it, as on GitHub
    ref = upstream.pull_request(43601, fix)
    builder = CandidateBuilder(workdir)
    candidate = CandidateSpec(base_sha=c1, patches=(ref,))
    with builder.build(repository, candidate) as built:
        assert "reset_dynamo = True" in read(built)
        assert built.patches_applied == (ref,)
        assert built.applied_shas == (fix,)
        assert worktree_git(built, "rev-parse", ref) == fix  # fetched into the mirror under its own name

    # The author pushes a second commit: the next job fetches the new head and applies both commits,
    # squashed into one on the base.
    upstream.checkout("reset-dynamo", fix)
    followup = upstream.commit(
        "Keep offload off", {PIPELINE: set_line(upstream_text(upstream), "offload", "False")}
    )
    upstream.checkout("main")
    upstream.pull_request(43601, followup)
    with builder.build(repository, candidate) as built:
        assert read(built) == "steps = 30\nreset_dynamo = True\noffload = False\n"
        assert built.applied_shas == (followup,)
        assert worktree_git(built, "rev-list", "--count", f"{c1}..HEAD") == "1"
        assert worktree_git(built, "log", "-1", "--format=%s%n%an") == "Keep offload off\nUpstream Dev"


def test_a_pinned_pull_request_builds_the_head_it_names_after_a_push(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c1 = sha_of(upstream, "main")
    upstream.checkout("reset-dynamo", c1)
    fix = upstream.commit(
        "Reset dynamo after offload", {PIPELINE: set_line(upstream_text(upstream), "reset_dynamo", "True")}
    )
    followup = upstream.commit(
        "Pushed later", {PIPELINE: set_line(upstream_text(upstream), "offload", "False")}
    )
    upstream.checkout("main")
    upstream.git("branch", "-D", "reset-dynamo")
    ref = upstream.pull_request(43601, followup)  # the PR moved on after the maintainer's /perf saw `fix`
    pinned = f"{ref}@{fix}"
    builder = CandidateBuilder(workdir)
    with builder.build(repository, CandidateSpec(base_sha=c1, patches=(pinned,))) as built:
        assert read(built) == "steps = 30\nreset_dynamo = True\noffload = True\n"
        assert built.patches_applied == (pinned,)
        assert built.applied_shas == (fix,)

    # Force-pushed away and collected: the pinned head is gone, and the error says so.
    gone = "f" * 40
    with (
        pytest.raises(CandidateBuildError, match="no longer in"),
        builder.build(repository, CandidateSpec(base_sha=c1, patches=(f"{ref}@{gone}",))),
    ):
        pass
    assert_cleaned_up(workdir)


def upstream_text(upstream: Upstream) -> str:
    return (upstream.path / PIPELINE).read_text()


def test_merge_commit_patch_applies_what_it_merged(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c0, c1 = sha_of(upstream, "main~1"), sha_of(upstream, "main")
    upstream.checkout("feature", c0)
    upstream.commit("Add feature", {"feature.txt": "on\n"})
    upstream.checkout("integration", c0)
    upstream.commit("Add notes", {"notes.txt": "n\n"})
    upstream.git("merge", "--quiet", "--no-ff", "--no-edit", "feature")
    merge = sha_of(upstream, "HEAD")
    upstream.checkout("main")
    with CandidateBuilder(workdir).build(repository, CandidateSpec(base_sha=c1, patches=(merge,))) as built:
        assert read(built, "feature.txt") == "on\n"
        assert not (built.path / "notes.txt").exists()  # the first parent's side is not part of it


def test_pull_request_that_merged_main_brings_only_its_own_changes(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c0, c1 = sha_of(upstream, "main~1"), sha_of(upstream, "main")
    upstream.checkout("docs", c0)
    upstream.commit("Document offload", {"README.md": "toy\noffload docs\n"})
    upstream.git("merge", "--quiet", "--no-edit", "main")  # brings c1 (30 steps) into the PR
    ref = upstream.pull_request(5, sha_of(upstream, "HEAD"))
    upstream.checkout("main")
    with CandidateBuilder(workdir).build(repository, CandidateSpec(base_sha=c0, patches=(ref,))) as built:
        assert read(built, "README.md") == "toy\noffload docs\n"
        assert read(built) == PIPELINE_TEXT  # still 20 steps: c1 is main's change, not the PR's
        assert upstream.tree(c1) != built.tree_sha


def test_conflict_names_patch_and_base_and_removes_worktree(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    c0, c1 = sha_of(upstream, "main~1"), sha_of(upstream, "main")
    upstream.checkout("steps", c0)
    patch = upstream.commit("Use 25 steps", {PIPELINE: set_line(PIPELINE_TEXT, "steps", "25")})
    upstream.checkout("main")
    ref = upstream.pull_request(102, patch)
    builder = CandidateBuilder(workdir)
    with (
        pytest.raises(CandidateBuildError) as error,
        builder.build(repository, CandidateSpec(base_sha=c1, patches=(ref,))),
    ):
        pytest.fail("a conflicting candidate must not be handed out")
    assert str(error.value) == (
        f"patch refs/pull/102/head ({patch[:7]} 'Use 25 steps') does not apply on base {c1[:7]}: "
        f"conflict in {PIPELINE}"
    )
    assert_cleaned_up(workdir)


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (CandidateSpec(base_sha="0" * 40), f"unknown base '{'0' * 40}'"),
        (CandidateSpec(base_sha="main", patches=("deadbeef",)), "unknown patch 'deadbeef'"),
        (CandidateSpec(base_sha="main", patches=("refs/pull/999/head",)), "cannot fetch refs/pull/999/head"),
        (
            CandidateSpec(base_sha="main", carried=(CarriedPatch("refs/pull/998/head"),)),
            "cannot fetch refs/pull/998/head",
        ),
        (CandidateSpec(base_sha="--help"), "base '--help' is not a commit sha or ref"),
    ],
)
def test_unknown_refs_are_named(
    repository: RepositorySpec, workdir: Path, candidate: CandidateSpec, message: str
) -> None:
    with (
        pytest.raises(CandidateBuildError, match=message),
        CandidateBuilder(workdir).build(repository, candidate),
    ):
        pass
    assert_cleaned_up(workdir)


def test_git_calls_have_a_timeout(repository: RepositorySpec, workdir: Path) -> None:
    builder = CandidateBuilder(workdir, git_timeout_s=1e-6)
    with (
        pytest.raises(CandidateBuildError, match="timed out"),
        builder.build(repository, CandidateSpec("main")),
    ):
        pass


# --- carried patches ----------------------------------------------------------------------------


@pytest.fixture
def fixes(upstream: Upstream) -> dict[str, str]:
    """Two fixes, each on its own PR branch from c1: ``dynamo`` (pipeline.py) and ``docs`` (README)."""
    c1 = sha_of(upstream, "main")
    upstream.checkout("fix-dynamo", c1)
    dynamo = upstream.commit(
        "Reset dynamo", {PIPELINE: set_line(upstream_text(upstream), "reset_dynamo", "True")}
    )
    upstream.checkout("fix-docs", c1)
    docs = upstream.commit("Fix docs", {"README.md": "toy pipeline\n"})
    upstream.checkout("main")
    upstream.pull_request(1, dynamo)
    upstream.pull_request(2, docs)
    return {"dynamo": dynamo, "docs": docs}


def test_carried_patch_merged_into_base_is_skipped(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    upstream.git("merge", "--quiet", "--no-ff", "--no-edit", "fix-dynamo")
    base = sha_of(upstream, "main")
    candidate = CandidateSpec(base_sha=base, carried=(CarriedPatch(fixes["dynamo"], reason="dynamo reset"),))
    with CandidateBuilder(workdir).build(repository, candidate) as built:
        assert built.patches_already_in == (fixes["dynamo"],)
        assert built.patches_applied == ()
        assert built.head_sha == base


def test_carried_patch_cherry_picked_onto_main_is_skipped_by_patch_id(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    upstream.commit("Add notes", {"notes.txt": "n\n"})
    picked = upstream.cherry_pick(fixes["dynamo"])
    upstream.commit("More notes", {"notes.txt": "n\nm\n"})
    base = sha_of(upstream, "main")
    assert picked != fixes["dynamo"]
    with pytest.raises(subprocess.CalledProcessError):  # not an ancestor: only the patch-id can tell
        upstream.git("merge-base", "--is-ancestor", fixes["dynamo"], base)
    candidate = CandidateSpec(base_sha=base, carried=(CarriedPatch("refs/pull/1/head"),))
    with CandidateBuilder(workdir).build(repository, candidate) as built:
        assert built.patches_already_in == ("refs/pull/1/head",)
        assert built.patches_applied == ()
        assert built.head_sha == base


def test_carried_multi_commit_patch_squash_merged_is_skipped(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    upstream.checkout("fix-dynamo")
    tip = upstream.commit(
        "Keep offload off", {PIPELINE: set_line(upstream_text(upstream), "offload", "False")}
    )
    upstream.checkout("main")
    upstream.git("merge", "--quiet", "--squash", "fix-dynamo")
    upstream.git("commit", "--quiet", "-m", "Reset dynamo and keep offload off (#1)")
    ref = upstream.pull_request(1, tip)
    candidate = CandidateSpec(base_sha=sha_of(upstream, "main"), carried=(CarriedPatch(ref),))
    with CandidateBuilder(workdir).build(repository, candidate) as built:
        assert built.patches_already_in == (ref,)


def test_carried_patch_absent_from_base_is_applied_before_the_patches(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    c1 = sha_of(upstream, "main")
    upstream.checkout("feature", c1)
    feature = upstream.commit("Add feature", {"feature.txt": "on\n"})
    upstream.checkout("main")
    candidate = CandidateSpec(base_sha=c1, patches=(feature,), carried=(CarriedPatch("refs/pull/1/head"),))
    with CandidateBuilder(workdir).build(repository, candidate) as built:
        assert "reset_dynamo = True" in read(built)
        assert read(built, "feature.txt") == "on\n"
        assert built.patches_applied == ("refs/pull/1/head", feature)
        assert built.applied_shas == (fixes["dynamo"], feature)
        assert built.patches_already_in == ()
        assert worktree_git(built, "log", "--format=%s", f"{c1}..HEAD").splitlines() == [
            "Add feature",
            "Reset dynamo",
        ]


def test_base_with_one_of_two_carried_fixes_carries_only_the_other(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    upstream.cherry_pick(fixes["docs"])
    base = sha_of(upstream, "main")
    carried = (CarriedPatch("refs/pull/1/head"), CarriedPatch("refs/pull/2/head"))
    with CandidateBuilder(workdir).build(repository, CandidateSpec(base_sha=base, carried=carried)) as built:
        assert built.patches_applied == ("refs/pull/1/head",)
        assert built.patches_already_in == ("refs/pull/2/head",)
        assert "reset_dynamo = True" in read(built)
        assert read(built, "README.md") == "toy pipeline\n"


def test_conflicting_carried_patch_is_named(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, fixes: dict[str, str]
) -> None:
    base = upstream.commit(
        "Drop dynamo reset", {PIPELINE: set_line(upstream_text(upstream), "reset_dynamo", "None")}
    )
    candidate = CandidateSpec(base_sha=base, carried=(CarriedPatch("refs/pull/1/head"),))
    with (
        pytest.raises(
            CandidateBuildError,
            match=rf"^carried patch refs/pull/1/head \({fixes['dynamo'][:7]} 'Reset dynamo'\) "
            rf"does not apply on base {base[:7]}: conflict in {PIPELINE}$",
        ),
        CandidateBuilder(workdir).build(repository, candidate),
    ):
        pass
    assert_cleaned_up(workdir)


# --- build command ------------------------------------------------------------------------------

# Stands in for `pip install -e python`: records each run (where, and what it saw) in a log file.
BUILD_SCRIPT = """
import os, sys
with open(sys.argv[1], "a") as runs:
    runs.write(os.getcwd() + " " + repr(open("toydit/pipeline.py").read()) + "\\n")
print("built ok")
"""


def test_build_runs_once_per_tree_and_reruns_when_it_changes(
    upstream: Upstream, repository: RepositorySpec, workdir: Path, tmp_path: Path, fixes: dict[str, str]
) -> None:
    runs = tmp_path / "runs.log"
    builder = CandidateBuilder(
        workdir, build_commands={"toy": [sys.executable, "-c", BUILD_SCRIPT, str(runs)]}
    )
    c0, c1 = sha_of(upstream, "main~1"), sha_of(upstream, "main")

    def build(candidate: CandidateSpec) -> tuple[bool, Path, str]:
        with builder.build(repository, candidate) as built:
            return built.build_reused, built.path, built.build_log

    def run_count() -> int:
        return len(runs.read_text().splitlines())

    reused, first_path, log = build(CandidateSpec(base_sha=c1))
    assert (reused, run_count(), log) == (False, 1, "built ok\n")
    assert runs.read_text().startswith(f"{first_path} ")

    reused, path, log = build(CandidateSpec(base_sha=c1))
    assert (reused, run_count(), path, log) == (True, 1, first_path, "built ok\n")

    # A different commit with the same tree (the patch is already in c1: an empty cherry-pick) reuses it.
    assert build(CandidateSpec(base_sha=c1, patches=(c1,)))[0] is True
    assert run_count() == 1

    assert build(CandidateSpec(base_sha=c1, patches=("refs/pull/1/head",)))[0] is False
    assert run_count() == 2
    # Back to c1: the environment now holds the patched build, so c1 is built again.
    assert build(CandidateSpec(base_sha=c1))[0] is False
    assert build(CandidateSpec(base_sha=c0))[0] is False
    assert run_count() == 4
    assert_cleaned_up(workdir)


def test_a_built_repository_builds_one_candidate_at_a_time(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    builder = CandidateBuilder(workdir, build_commands={"toy": [sys.executable, "-c", "pass"]})
    with builder.build(repository, CandidateSpec(base_sha="main")) as built:
        with (
            pytest.raises(CandidateBuildError, match="in use by another build"),
            builder.build(repository, CandidateSpec(base_sha="main~1")),
        ):
            pass
        assert built.path.is_dir()  # the refused build did not touch the live one


def test_failing_build_reports_the_output_tail(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    script = "import sys\nfor i in range(100): print(f'step {i}')\nprint('error: kernel boom', file=sys.stderr)\nsys.exit(3)"
    builder = CandidateBuilder(workdir, build_commands={"toy": [sys.executable, "-c", script]})
    with (
        pytest.raises(CandidateBuildError) as error,
        builder.build(repository, CandidateSpec(base_sha="main")),
    ):
        pytest.fail("a failed build must not be handed out")
    message = str(error.value)
    assert "failed (exit 3)" in message
    assert message.endswith("step 99\nerror: kernel boom")
    assert "step 10\n" not in message  # only the tail
    assert_cleaned_up(workdir)


def test_build_command_given_as_string_is_split_without_a_shell(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    command = f"{sys.executable} -c 'import sys; print(sys.argv[1:])' '$HOME' ';' \"two words\""
    builder = CandidateBuilder(workdir, build_commands={"toy": command})
    with builder.build(repository, CandidateSpec(base_sha="main")) as built:
        assert built.build_log == "['$HOME', ';', 'two words']\n"


def test_build_timeout_is_an_error(upstream: Upstream, repository: RepositorySpec, workdir: Path) -> None:
    script = "import time\nprint('linking', flush=True)\ntime.sleep(30)"
    builder = CandidateBuilder(
        workdir, build_commands={"toy": [sys.executable, "-c", script]}, build_timeout_s=1
    )
    with (
        pytest.raises(CandidateBuildError, match=r"timed out after 1 s(.|\n)*linking"),
        builder.build(repository, CandidateSpec(base_sha="main")),
    ):
        pass


# --- cleanup ------------------------------------------------------------------------------------


def run_crashing_benchmark(builder: CandidateBuilder, repository: RepositorySpec, seen: list[Path]) -> None:
    with builder.build(repository, CandidateSpec(base_sha="main")) as built:
        seen.append(built.path)
        assert built.path.is_dir()
        raise RuntimeError("benchmark crashed")


def test_worktree_removed_when_the_with_block_raises(repository: RepositorySpec, workdir: Path) -> None:
    seen: list[Path] = []
    with pytest.raises(RuntimeError, match="benchmark crashed"):
        run_crashing_benchmark(CandidateBuilder(workdir), repository, seen)
    assert len(seen) == 1
    assert not seen[0].exists()
    assert_cleaned_up(workdir)


CRASHING_AGENT = """
import os, sys
from pathlib import Path
from runners.candidates import CandidateBuilder
from runners.jobspec import CandidateSpec, RepositorySpec

builder = CandidateBuilder(Path(sys.argv[1]))
# Keep the context manager referenced: a collected generator would run its cleanup.
context = builder.build(RepositorySpec(name="toy", url=sys.argv[2]), CandidateSpec(base_sha="main"))
built = context.__enter__()
print(built.path, flush=True)
os._exit(1)  # dies inside the with-block: nothing cleans up
"""


def test_stale_worktree_of_a_crashed_agent_is_pruned_but_a_live_one_is_kept(
    upstream: Upstream, repository: RepositorySpec, workdir: Path
) -> None:
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_AGENT, str(workdir), str(upstream.path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert crashed.returncode == 1, crashed.stderr
    stale = Path(crashed.stdout.strip())
    assert (stale / PIPELINE).is_file()
    assert len(registered_worktrees(workdir)) == 1

    with CandidateBuilder(workdir).build(repository, CandidateSpec(base_sha="main~1")) as live:
        assert not stale.exists()
        assert registered_worktrees(workdir) == [f"worktree {live.path}"]
        # A second builder on the same workdir (a mistake) must not prune the live worktree.
        assert CandidateBuilder(workdir).prune() == []
        assert read(live) == PIPELINE_TEXT
    assert_cleaned_up(workdir)


def test_a_build_waits_for_the_mirror_another_agent_holds(repository: RepositorySpec, workdir: Path) -> None:
    other_agent = UnixFileLock(workdir / "mirrors" / "toy.lock")  # a second agent sharing the workdir
    other_agent.acquire()
    built: list[Path] = []

    def build() -> None:
        with CandidateBuilder(workdir).build(repository, CandidateSpec(base_sha="main")) as candidate:
            built.append(candidate.path)

    builder = threading.Thread(target=build)
    builder.start()
    try:
        builder.join(timeout=0.5)
        assert builder.is_alive()
        assert built == []
        assert not (workdir / "mirrors" / "toy.git").exists()  # not fetched into while held
    finally:
        other_agent.release()
    builder.join(timeout=60)
    assert len(built) == 1
    assert_cleaned_up(workdir)
